package lmcache4j.cuda.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * Builds downcall handles that capture {@code errno} right after the call returns, before the JVM
 * can clobber it. jextract's generated handles do not capture call state, so the hand-written
 * layer takes the generated symbol address and descriptor and links them again with
 * {@link Linker.Option#captureCallState(String...)}.
 *
 * <p>A handle made here takes one extra leading {@link MemorySegment} argument: the capture
 * buffer, allocated with {@link #allocateCaptureState(Arena)}.
 */
public final class ErrnoCapturingLinker {
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO =
            CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private ErrnoCapturingLinker() {
    }

    /** A downcall handle for {@code address} with {@code descriptor} that records errno. */
    public static MethodHandle link(MemorySegment address, FunctionDescriptor descriptor) {
        return Linker.nativeLinker().downcallHandle(address, descriptor, CAPTURE_ERRNO);
    }

    /** As {@link #link}, for a variadic function whose fixed part has {@code fixedArgs} arguments. */
    public static MethodHandle linkVariadic(MemorySegment address, FunctionDescriptor descriptor, int fixedArgs) {
        return Linker.nativeLinker().downcallHandle(
                address, descriptor, Linker.Option.firstVariadicArg(fixedArgs), CAPTURE_ERRNO);
    }

    /** A buffer for the captured call state, to pass as a handle's first argument. */
    public static MemorySegment allocateCaptureState(Arena arena) {
        return arena.allocate(CAPTURE_LAYOUT);
    }

    /** The errno value a call stored in {@code captureState}. */
    public static int errno(MemorySegment captureState) {
        return (int) ERRNO.get(captureState, 0L);
    }
}
