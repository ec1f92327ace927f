package lmcache4j.engine.connector.internal;

import java.lang.foreign.MemorySegment;

import lmcache4j.engine.connector.HostCopyRoutine;
import lmcache4j.engine.connector.PagedKvCache;

/**
 * Copies for KV caches in host memory, with streaming stores where the machine offers them and
 * {@link MemorySegment#copy} otherwise: each plan is split across the calling thread and the
 * helpers of a {@link HostCopyPool}. Synchronous: a plan is copied when
 * {@code gather} or {@code scatter} returns.
 */
public final class HostCopyExecutor implements CopyExecutor {
    private final HostCopyPool pool;

    /** An executor that copies on the calling thread alone. */
    public HostCopyExecutor() {
        this(1);
    }

    /**
     * An executor that splits each plan across up to {@code threads} threads, the caller included,
     * writing with streaming stores where the machine offers them.
     */
    public HostCopyExecutor(int threads) {
        this(threads, true);
    }

    /** As {@link #HostCopyExecutor(int)}; {@code streamingStores} false writes with ordinary cached stores. */
    public HostCopyExecutor(int threads, boolean streamingStores) {
        this.pool = new HostCopyPool(threads, streamingStores);
    }

    /** As {@link #HostCopyExecutor(int)}, plans of 4 MiB or more copied with {@code routine} where the machine runs it. */
    public HostCopyExecutor(int threads, HostCopyRoutine routine) {
        this.pool = new HostCopyPool(threads, routine);
    }

    @Override
    public void gather(CopyPlan plan, PagedKvCache kv, MemorySegment object) {
        pool.gather(plan, kv, object);
    }

    @Override
    public void scatter(CopyPlan plan, MemorySegment object, PagedKvCache kv) {
        pool.scatter(plan, object, kv);
    }

    @Override
    public void finish() {
        // copies are done when they return
    }

    @Override
    public String name() {
        return "host";
    }

    @Override
    public int threads() {
        return pool.threads();
    }

    @Override
    public String streamingStores() {
        return pool.streamingStores();
    }

    @Override
    public long hostCopiedBytes() {
        return pool.copiedBytes();
    }

    @Override
    public long streamedBytes() {
        return pool.streamedBytes();
    }

    /** The pool the copies run on. */
    HostCopyPool pool() {
        return pool;
    }

    /** Stops the pool's helper threads. */
    @Override
    public void close() {
        pool.close();
    }
}
