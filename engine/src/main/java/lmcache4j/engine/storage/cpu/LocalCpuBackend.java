package lmcache4j.engine.storage.cpu;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.CpuTier;
import lmcache4j.engine.storage.MemoryWaitTimeoutException;
import lmcache4j.engine.storage.internal.ResidencyIndex;
import lmcache4j.engine.storage.internal.TimedLock;
import lmcache4j.engine.storage.ResidencyListener;
import lmcache4j.engine.storage.policy.CachePolicies;
import lmcache4j.engine.storage.policy.CachePolicy;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;

/**
 * The CPU tier (LMCache spec §3.4): the hot cache of {@link MemoryObj}s under one lock with its
 * {@link CachePolicy}, and the {@link lmcache4j.engine.storage.MemoryProvider} every other tier reads into.
 *
 * <p>With {@code local_cpu = false} it still allocates but keeps nothing (puts are no-ops), as in
 * LMCache. Allocation evicts through the policy; stores never wait for memory (many concurrent
 * stores would wait on each other), retrieves wait up to the blocking timeout and then fail with a
 * clear error rather than spin forever.
 */
public final class LocalCpuBackend implements CpuTier {
    /** LMCache's backend name. */
    public static final String NAME = "LocalCPUBackend";

    private final MemoryAllocator allocator;
    private final boolean retain;
    private final long blockingTimeoutNanos;
    private final Supplier<IdleStrategy> idleStrategies;
    private final ResidencyIndex<MemoryObj> hot;
    private final TimedLock lock;
    private final LongAdder evictions = new LongAdder();
    private final LongAdder evictionFailures = new LongAdder();
    private boolean closed;

    /**
     * @param allocator           the pool; owned from now on and closed with the tier
     * @param cachePolicy         LMCache name of the policy ({@code cache_policy})
     * @param retain              {@code local_cpu}: whether the tier keeps objects at all
     * @param blockingTimeoutSecs how long a retrieve waits for memory ({@code blocking_timeout_secs})
     */
    public LocalCpuBackend(MemoryAllocator allocator, String cachePolicy, boolean retain, double blockingTimeoutSecs) {
        this.allocator = Objects.requireNonNull(allocator, "allocator");
        this.hot = new ResidencyIndex<>(CachePolicies.forChunks(cachePolicy), MemoryObj::pin, LocalCpuBackend::unpinIfPinned,
                MemoryObj::canEvict);
        this.lock = hot.lock();
        this.retain = retain;
        if (!(blockingTimeoutSecs > 0)) {
            throw new IllegalArgumentException("blocking_timeout_secs must be positive, was " + blockingTimeoutSecs);
        }
        this.blockingTimeoutNanos = (long) (blockingTimeoutSecs * 1e9);
        this.idleStrategies = () -> new BackoffIdleStrategy(10, 20, TimeUnit.MICROSECONDS.toNanos(1),
                TimeUnit.MILLISECONDS.toNanos(1));
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void setResidencyListener(ResidencyListener listener) {
        hot.setListener(NAME, listener);
    }

    @Override
    public Optional<List<CacheKey>> residentKeys() {
        return Optional.of(hot.keys());
    }

    @Override
    public MemoryAllocator allocator() {
        return allocator;
    }

    /** The policy's name. */
    @Override
    public String policyName() {
        return hot.policyName();
    }

    // ---- lookups ----------------------------------------------------------------------------

    @Override
    public boolean contains(CacheKey key, boolean pin) {
        return hot.contains(key, pin);
    }

    @Override
    public int batchedContains(List<? extends CacheKey> keys, boolean pin) {
        return hot.prefixHits(keys, pin);
    }

    @Override
    public boolean[] containsEach(List<? extends CacheKey> keys) {
        return hot.containsEach(keys);
    }

    @Override
    public Optional<MemoryObj> getBlocking(CacheKey key) {
        lock.lock();
        try {
            MemoryObj obj = hot.get(key);
            return obj == null ? Optional.empty() : Optional.of(obj.retain()); // the caller's reference
        } finally {
            lock.unlock();
        }
    }

    // ---- puts and removal -------------------------------------------------------------------

    /** Keeps {@code obj} under {@code key} unless the key is held already (one chunk: no lists, as a lower tier's write-back). */
    @Override
    public void submitPut(CacheKey key, MemoryObj obj) {
        if (!retain) {
            return;
        }
        lock.lock();
        try {
            ensureOpen();
            keep(key, obj);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
        if (keys.size() != objs.size()) {
            throw new IllegalArgumentException(keys.size() + " keys but " + objs.size() + " objects");
        }
        if (!retain) {
            return;
        }
        lock.lock();
        try {
            ensureOpen();
            for (int i = 0; i < keys.size(); i++) {
                keep(keys.get(i), objs.get(i));
            }
        } finally {
            lock.unlock();
        }
    }

    /** Holds {@code obj} under {@code key} with the tier's own reference, unless the key is held; under the lock. */
    private void keep(CacheKey key, MemoryObj obj) {
        if (!hot.containsKey(key)) {
            hot.put(key, obj.retain());
        }
    }

    /** Pins the stored object; false if absent. */
    public boolean pin(CacheKey key) {
        return hot.pin(key);
    }

    @Override
    public boolean unpin(CacheKey key) {
        return hot.unpin(key);
    }

    @Override
    public void batchedUnpin(List<? extends CacheKey> keys) {
        hot.unpinAll(keys);
    }

    private static boolean unpinIfPinned(MemoryObj obj) {
        if (obj.pinCount() == 0) {
            return false;
        }
        obj.unpin();
        return true;
    }

    @Override
    public boolean remove(CacheKey key) {
        MemoryObj obj = hot.remove(key);
        if (obj == null) {
            return false;
        }
        obj.release(); // outside the lock: freeing is the allocator's work, under its own lock
        return true;
    }

    private boolean removeLocked(CacheKey key) {
        MemoryObj obj = hot.remove(key);
        if (obj == null) {
            return false;
        }
        obj.release();
        return true;
    }

    /** Recency for the keys the latest lookup pinned, last chunk first so the prefix ends up most recent. */
    @Override
    public void touchCache() {
        hot.touch();
    }

    @Override
    public long clear() {
        List<MemoryObj> removed = new ArrayList<>();
        lock.lock();
        try {
            for (CacheKey key : hot.evictableKeys()) {
                removed.add(hot.remove(key));
            }
        } finally {
            lock.unlock();
        }
        long tokens = 0;
        for (MemoryObj obj : removed) {
            tokens += obj.tokenCount();
            obj.release(); // outside the lock, as in remove
        }
        return tokens;
    }

    // ---- allocation -------------------------------------------------------------------------

    @Override
    public Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format, AllocationMode mode) {
        return allocateWith(() -> allocator.allocate(shape, dtype, format), mode,
                () -> shape + " of " + dtype.torchName());
    }

    @Override
    public Optional<List<MemoryObj>> allocateBatch(TensorShape shape, DType dtype, MemoryFormat format, int count,
                                                   AllocationMode mode) {
        return allocateWith(() -> allocator.allocateBatch(shape, dtype, format, count), mode,
                () -> count + " × " + shape + " of " + dtype.torchName());
    }

    private <T> Optional<T> allocateWith(Supplier<Optional<T>> attempt, AllocationMode mode, Supplier<String> what) {
        Objects.requireNonNull(mode, "mode");
        IdleStrategy idle = null;
        long deadline = 0;
        while (true) {
            Optional<T> result = attempt.get();
            if (result.isPresent() || mode == AllocationMode.NO_EVICTION) {
                return result;
            }
            if (evictOne()) {
                if (idle != null) {
                    idle.reset();
                }
                continue;
            }
            if (mode == AllocationMode.EVICT) {
                return Optional.empty();
            }
            if (idle == null) {
                idle = idleStrategies.get();
                deadline = System.nanoTime() + blockingTimeoutNanos;
            } else if (System.nanoTime() - deadline > 0) {
                throw new MemoryWaitTimeoutException("no memory for " + what.get() + " after waiting "
                        + blockingTimeoutNanos / 1e9 + " s (blocking_timeout_secs): every cached object is pinned "
                        + "or in use; " + allocator.stats());
            }
            idle.idle();
        }
    }

    /** Evicts the policy's best evictable candidate; false when nothing can be evicted. */
    private boolean evictOne() {
        MemoryObj victim;
        lock.lock();
        try {
            if (!retain || closed) {
                return false;
            }
            victim = hot.evictOne();
        } finally {
            lock.unlock();
        }
        if (victim == null) {
            evictionFailures.increment();
            return false;
        }
        // Out of the index already, so no one else can reach it: its memory goes back after the lock is
        // released (freeing takes the allocator's own lock), before the caller retries its allocation.
        victim.release();
        evictions.increment();
        return true;
    }

    // ---- accounting -------------------------------------------------------------------------

    /** The CPU tier's gauges: pool usage, live and pinned objects, cached entries, evictions. */
    @Override
    public void publishMetrics(EngineMetrics metrics) {
        metrics.bindTiers(new EngineMetrics.TierGauges(() -> allocator.stats().usedBytes(),
                () -> allocator.stats().liveObjects(), () -> allocator.stats().pinnedObjects(), this::size,
                this::evictions, this::evictionFailures));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:cpu_tier_lock_acquisitions",
                "Times the CPU tier's lock was taken (lmcache4j)", true, lock::acquisitions));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:cpu_tier_lock_contended",
                "Times a thread found the CPU tier's lock held and waited (lmcache4j)", true, lock::contended));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:cpu_tier_lock_wait_nanos",
                "Nanoseconds threads waited for the CPU tier's lock, summed over threads (lmcache4j)", true, lock::waitNanos));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:cpu_tier_lock_hold_nanos",
                "Nanoseconds the CPU tier's lock was held (lmcache4j)", true, lock::holdNanos));
    }

    /** The lock the tier works under, with its wait and hold counters. */
    public TimedLock lock() {
        return lock;
    }

    /** Cached entries. */
    @Override
    public int size() {
        return hot.size();
    }

    /** Entries evicted to make room, since creation. */
    @Override
    public long evictions() {
        return evictions.sum();
    }

    /** Times an allocation needed room and nothing was evictable. */
    @Override
    public long evictionFailures() {
        return evictionFailures.sum();
    }

    /**
     * How many full chunks fit in {@code capacityBytes} (LMCache's {@code calculate_chunk_budget}):
     * capacity ÷ the chunk's bytes rounded up to {@code alignment}.
     */
    public static long chunkBudget(long capacityBytes, long fullChunkBytes, long alignment) {
        if (fullChunkBytes <= 0 || alignment <= 0) {
            throw new IllegalArgumentException("chunk bytes and alignment must be positive");
        }
        long aligned = (fullChunkBytes + alignment - 1) / alignment * alignment;
        return capacityBytes / aligned;
    }

    /** Checks that the policy tracks exactly the cached keys and the allocator's invariants hold. */
    @Override
    public void memcheck() {
        lock.lock();
        try {
            hot.check();
            allocator.memcheck();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Drops the tier's reference to every entry and closes the allocator, which fails, listing
     * them, if any object is still held elsewhere.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            for (CacheKey key : hot.keys()) {
                removeLocked(key);
            }
            hot.forgetRequest();
        } finally {
            lock.unlock();
        }
        allocator.close();
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(NAME + " is closed");
        }
    }
}
