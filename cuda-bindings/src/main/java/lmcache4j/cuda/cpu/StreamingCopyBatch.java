package lmcache4j.cuda.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * Runs collected for one {@link StreamingCopy} downcall: many runs between one source and one
 * destination segment cost one call into the routine. Runs are copied by {@link #flush()}, which
 * {@link #add} also calls when the batch is full or the next run has another source or destination;
 * nothing is copied until then, so a caller flushes before anyone reads the destination.
 *
 * <p>The batch is where the routine's trust is earned. A run is accepted only when it lies within
 * both segments (else {@link IndexOutOfBoundsException}, as {@link MemorySegment#copy} would throw)
 * and {@link StreamingCopy#canStream} holds. The routine receives the two segments themselves, so
 * the FFM linker refuses a segment whose arena is closed or owned by another thread, and keeps a
 * shared arena from closing while the copy runs: a stale segment is an exception, never a fault.
 *
 * <p>Not thread-safe: one batch per thread (its run list lives in a confined arena).
 * {@link #close()} flushes what is pending and frees the list.
 */
public final class StreamingCopyBatch implements AutoCloseable {
    private static final long RUN_BYTES = 3 * Long.BYTES;

    private final StreamingCopy routine;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment runs;
    private final int capacity;
    private MemorySegment src;
    private MemorySegment dst;
    private int count;
    private long streamedBytes;

    StreamingCopyBatch(StreamingCopy routine, int capacity) {
        if (capacity < 1 || capacity > 1 << 20) {
            throw new IllegalArgumentException("a streaming batch holds 1 to 1048576 runs, asked for " + capacity);
        }
        this.routine = Objects.requireNonNull(routine, "routine");
        this.capacity = capacity;
        this.runs = arena.allocate(RUN_BYTES * capacity, Long.BYTES);
    }

    /**
     * Queues {@code length} bytes from {@code src} at {@code srcOffset} to {@code dst} at
     * {@code dstOffset}, or returns {@code false} (queuing nothing) when the routine cannot stream
     * this run: the caller then copies it some other way, after a {@link #flush()} if the order of
     * overlapping writes matters.
     *
     * @throws IndexOutOfBoundsException when the run lies outside either segment
     */
    public boolean add(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        Objects.checkFromIndexSize(srcOffset, length, src.byteSize());
        Objects.checkFromIndexSize(dstOffset, length, dst.byteSize());
        if (!routine.canStream(src, srcOffset, dst, dstOffset, length)) {
            return false;
        }
        if (count == capacity || (count > 0 && !(sameMemory(this.src, src) && sameMemory(this.dst, dst)))) {
            flush();
        }
        if (count == 0) {
            this.src = src;
            this.dst = dst;
        }
        long at = count * RUN_BYTES;
        runs.set(ValueLayout.JAVA_LONG, at, srcOffset);
        runs.set(ValueLayout.JAVA_LONG, at + Long.BYTES, dstOffset);
        runs.set(ValueLayout.JAVA_LONG, at + 2 * Long.BYTES, length);
        count++;
        streamedBytes += length;
        return true;
    }

    /** Copies every queued run; when it returns their bytes are written and visible to all threads. */
    public void flush() {
        if (count == 0) {
            return;
        }
        int n = count;
        count = 0;
        MemorySegment from = src;
        MemorySegment to = dst;
        src = null;
        dst = null;
        routine.invoke(from, to, runs, n);
    }

    /** Drops the queued runs without copying them (after a failure, when their plan is abandoned). */
    public void discard() {
        count = 0;
        src = null;
        dst = null;
    }

    /** Runs queued and not yet copied. */
    public int pending() {
        return count;
    }

    /** Bytes accepted by {@link #add} over this batch's life. */
    public long streamedBytes() {
        return streamedBytes;
    }

    /** The routine this batch feeds. */
    public StreamingCopy routine() {
        return routine;
    }

    /** Copies what is pending, then frees the run list. */
    @Override
    public void close() {
        try {
            flush();
        } finally {
            arena.close();
        }
    }

    /** Same base, size and lifetime: offsets checked against one are valid in the other. */
    private static boolean sameMemory(MemorySegment a, MemorySegment b) {
        return a == b || (a.address() == b.address() && a.byteSize() == b.byteSize() && a.scope().equals(b.scope())
                && a.isReadOnly() == b.isReadOnly());
    }
}
