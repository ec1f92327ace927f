package lmcache4j.cuda.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.cuda.internal.Downcalls;

/**
 * The C library's {@code memcpy}, called through the FFM linker for one run at a time.
 *
 * <p>Why: to measure lmcache4j's own {@link StreamingCopy} against the C library's copy, which
 * picks its code per CPU at load time ({@code rep movsb} where string moves are fast, vector loops
 * elsewhere) and writes copies above {@code glibc.cpu.x86_non_temporal_threshold} with
 * non-temporal stores (glibc 2.36 on AMD: only those above the L2 size, as {@code rep movsb} takes
 * the shorter ones). The launcher lowers that tunable ({@code GLIBC_TUNABLES}) unless the user set it.
 *
 * <p>Runs are checked before the call: inside both segments (else {@link IndexOutOfBoundsException}),
 * and copied with {@link MemorySegment#copy} instead when either segment is on the heap, the
 * destination is read-only, or the two overlap ({@code memcpy} does not allow that). The slices
 * are the call's arguments, so a closed arena or another thread's confined memory is an exception
 * from the linker, never a fault. Thread-safe.
 */
public final class LibcMemcpy {
    private final MethodHandle memcpy;

    private LibcMemcpy(MethodHandle memcpy) {
        this.memcpy = memcpy;
    }

    /** The C library's {@code memcpy}, linked once, or empty: see {@link #unavailabilityCause()}. */
    public static Optional<LibcMemcpy> machine() {
        return Linked.COPY;
    }

    /** Why {@link #machine()} is empty (e.g. no native access for {@code lmcache4j.cuda}); empty when it is not. */
    public static Optional<Throwable> unavailabilityCause() {
        return Optional.ofNullable(Linked.CAUSE);
    }

    /**
     * Copies {@code length} bytes from {@code src} at {@code srcOffset} to {@code dst} at
     * {@code dstOffset}; returns whether {@code memcpy} did it ({@code false}: {@link MemorySegment#copy} did).
     *
     * @throws IndexOutOfBoundsException when the run lies outside either segment
     */
    public boolean copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        Objects.checkFromIndexSize(srcOffset, length, src.byteSize());
        Objects.checkFromIndexSize(dstOffset, length, dst.byteSize());
        if (!src.isNative() || !dst.isNative() || dst.isReadOnly() || overlap(src, srcOffset, dst, dstOffset, length)) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, length);
            return false;
        }
        try {
            memcpy.invokeExact(dst.asSlice(dstOffset, length), src.asSlice(srcOffset, length), length);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("memcpy downcall failed", t);
        }
        return true;
    }

    private static boolean overlap(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        long from = src.address() + srcOffset;
        long to = dst.address() + dstOffset;
        return from < to + length && to < from + length;
    }

    @Override
    public String toString() {
        return "LibcMemcpy";
    }

    /** Linked on first use; a failure (no native access, no such symbol) is kept as the cause. */
    private static final class Linked {
        static final Optional<LibcMemcpy> COPY;
        static final Throwable CAUSE;

        static {
            LibcMemcpy copy = null;
            Throwable cause = null;
            try {
                copy = new LibcMemcpy(Downcalls.link(Downcalls.libcSymbol("memcpy"), Downcalls.memcpy));
            } catch (RuntimeException | LinkageError e) {
                cause = e;
            }
            COPY = Optional.ofNullable(copy);
            CAUSE = cause;
        }
    }
}
