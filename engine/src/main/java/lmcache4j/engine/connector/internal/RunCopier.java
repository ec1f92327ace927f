package lmcache4j.engine.connector.internal;

import java.lang.foreign.MemorySegment;

import lmcache4j.cuda.cpu.LibcMemcpy;
import lmcache4j.cuda.cpu.StreamingCopy;
import lmcache4j.cuda.cpu.StreamingCopyBatch;
import lmcache4j.engine.connector.HostCopyRoutine;

/**
 * How one participant of a {@link HostCopyPool} writes a plan's runs: through a routine, or with
 * {@link MemorySegment#copy} where the routine refuses a run. Not thread-safe: one per participant.
 */
sealed interface RunCopier extends AutoCloseable {
    /**
     * Copies one run, or queues it until {@link #flush()}; returns the bytes the routine took
     * (0: {@link MemorySegment#copy} wrote it, after what was queued).
     */
    long copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length);

    /** Writes every queued run (nothing, for a copier that queues none). */
    default void flush() {
    }

    /** Drops the queued runs (their plan failed; nothing of it may be copied later). */
    default void discard() {
    }

    @Override
    default void close() {
    }

    /** The copier for {@code routine}, which must be available. */
    static RunCopier of(HostCopyRoutine routine, int batchRuns) {
        return switch (routine) {
            case STREAMING_STORES -> new Streaming(StreamingCopy.machine().orElseThrow().newBatch(batchRuns));
            case LIBC_MEMCPY -> new Memcpy(LibcMemcpy.machine().orElseThrow());
            case SEGMENT_COPY -> SegmentCopy.INSTANCE;
        };
    }

    /** Runs batched for the streaming-store routine: one downcall for many runs. */
    record Streaming(StreamingCopyBatch batch) implements RunCopier {
        @Override
        public long copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
            if (batch.add(src, srcOffset, dst, dstOffset, length)) {
                return length;
            }
            batch.flush(); // writes land in plan order
            MemorySegment.copy(src, srcOffset, dst, dstOffset, length);
            return 0;
        }

        @Override
        public void flush() {
            batch.flush();
        }

        @Override
        public void discard() {
            batch.discard();
        }

        @Override
        public void close() {
            batch.close();
        }
    }

    /** One {@code memcpy} downcall a run. */
    record Memcpy(LibcMemcpy memcpy) implements RunCopier {
        @Override
        public long copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
            return memcpy.copy(src, srcOffset, dst, dstOffset, length) ? length : 0;
        }
    }

    /** {@link MemorySegment#copy} for every run. */
    enum SegmentCopy implements RunCopier {
        INSTANCE;

        @Override
        public long copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, length);
            return 0;
        }
    }
}
