package lmcache4j.cuda.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;

/**
 * The capture buffer of downcalls that record {@code errno} right after the call returns, before
 * the JVM can clobber it. jextract's generated handles do not capture call state, so the
 * hand-written layer links the same symbols again through the {@code ...WithErrno} entries of
 * {@link Downcalls} ({@link Linker.Option#captureCallState(String...)}).
 *
 * <p>Such a handle takes one extra leading {@link MemorySegment} argument: the capture buffer,
 * allocated with {@link #allocateCaptureState(Arena)}.
 */
public final class CapturedErrno {
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO =
            CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private CapturedErrno() {
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
