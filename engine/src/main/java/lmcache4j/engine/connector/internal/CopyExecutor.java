package lmcache4j.engine.connector.internal;

import java.lang.foreign.MemorySegment;

import lmcache4j.engine.connector.PagedKvCache;

/**
 * Carries out {@link CopyPlan}s. Copies submitted between two {@link #finish()} calls may run
 * asynchronously; {@code finish} returns when all of them are done (one synchronisation per batch).
 */
public interface CopyExecutor extends AutoCloseable {
    /** Copies each run from the paged buffers into {@code object}. */
    void gather(CopyPlan plan, PagedKvCache kv, MemorySegment object);

    /** Copies each run from {@code object} into the paged buffers. */
    void scatter(CopyPlan plan, MemorySegment object, PagedKvCache kv);

    /** Waits until every submitted copy is done. */
    void finish();

    /** A name for logs and reports: {@code host} or {@code cuda}. */
    String name();

    /** The most host threads one plan's copies run on, the caller included (1 for a device's copy engine). */
    default int threads() {
        return 1;
    }

    /**
     * How host copies write their destination: {@code avx2} or {@code sse2} streaming stores, or
     * {@code off (why)}; {@code none} for an executor that does not copy on the host.
     */
    default String streamingStores() {
        return "none";
    }

    /** Bytes this executor has copied on the host (0 for one that copies on a device). */
    default long hostCopiedBytes() {
        return 0;
    }

    /** Of {@link #hostCopiedBytes()}, the bytes written with streaming stores. */
    default long streamedBytes() {
        return 0;
    }

    @Override
    void close();
}
