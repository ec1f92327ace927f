package lmcache4j.engine.storage;

import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.metrics.MetricsSource;

/**
 * One storage tier (LMCache spec §3.1). Reference rules: a tier that keeps an object takes its own
 * reference ({@link MemoryObj#retain()}); the caller of a put keeps (and later drops) its own; every
 * object a get returns carries one reference that the caller must release. Prefix semantics: the
 * batched lookups stop at the first missing key and never report a hole.
 *
 * <p>A tier that reads objects back allocates them from a {@link MemoryProvider} it was given, never
 * from another tier. It publishes its own metrics ({@link MetricsSource}). Capabilities only some
 * tiers have are small interfaces offered through accessors ({@link #prefetching()}), so callers
 * ask for them and never cast to a concrete tier.
 *
 * <p>Implementations are thread-safe.
 */
public interface StorageBackend extends AutoCloseable, MetricsSource {

    /** The tier's name (LMCache's class names: {@code LocalCPUBackend}, {@code LocalDiskBackend}, ...). */
    String name();

    /** Whether the tier holds {@code key}; with {@code pin}, also pins the stored object. */
    boolean contains(CacheKey key, boolean pin);

    /**
     * Stores {@code objs[i]} under {@code keys[i]}, possibly asynchronously; later lookups see the
     * result. Keys already stored are skipped. The caller's references stay the caller's.
     */
    void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs);

    /** The object under {@code key}, with a reference for the caller, or empty. */
    Optional<MemoryObj> getBlocking(CacheKey key);

    /** How many leading keys the tier holds; with {@code pin}, pins each of them. */
    default int batchedContains(List<? extends CacheKey> keys, boolean pin) {
        return leadingHits(keys, key -> contains(key, pin));
    }

    /**
     * For each of {@code keys}, whether the tier holds it (no pinning, no recency change): one call
     * for a whole store's chunks, which a tier under a lock answers under one acquisition.
     */
    default boolean[] containsEach(List<? extends CacheKey> keys) {
        boolean[] held = new boolean[keys.size()];
        for (int i = 0; i < held.length; i++) {
            held[i] = contains(keys.get(i), false);
        }
        return held;
    }

    /** How many of {@code keys}, from the first, {@code hit} accepts before the first it does not. */
    static int leadingHits(List<? extends CacheKey> keys, Predicate<? super CacheKey> hit) {
        int hits = 0;
        for (CacheKey key : keys) {
            if (!hit.test(key)) {
                break;
            }
            hits++;
        }
        return hits;
    }

    /** Undoes one pin of the stored object; false if absent or not pinned. */
    boolean unpin(CacheKey key);

    /** Unpins each of {@code keys} as {@link #unpin} does; a tier may do it in one step (one lock, not one per key). */
    default void batchedUnpin(List<? extends CacheKey> keys) {
        for (CacheKey key : keys) {
            unpin(key);
        }
    }

    /** Removes {@code key}, dropping the tier's reference; false if absent. */
    boolean remove(CacheKey key);

    /**
     * The allocator this tier's objects must come from when it is not the CPU tier's (for example
     * a device-side tier). A put then copies each object into memory from that allocator first.
     */
    default Optional<AllocatorBackend> ownAllocator() {
        return Optional.empty();
    }

    /** Whether asking this tier is cheap (memory or a local disk), as opposed to a network round trip. */
    default boolean isLocal() {
        return true;
    }

    /** The tier's prefetch, if it can load chunks ahead of a retrieve. */
    default Optional<Prefetching> prefetching() {
        return Optional.empty();
    }

    /**
     * Tells {@code listener} of every chunk that enters or leaves this tier from now on. Tiers that
     * cannot see their own residency ignore it (the default).
     */
    default void setResidencyListener(ResidencyListener listener) {
    }

    /**
     * The keys the tier holds now (a snapshot, for a full re-sync of the cache controller), or
     * empty when the tier cannot list them (a shared remote store).
     */
    default Optional<List<CacheKey>> residentKeys() {
        return Optional.empty();
    }

    /** Publishes nothing unless the tier has metrics of its own. */
    @Override
    default void publishMetrics(EngineMetrics metrics) {
    }

    /** Applies the recency updates of the keys pinned by the latest lookup. */
    void touchCache();

    /** Removes every evictable entry; returns the number of tokens removed. */
    default long clear() {
        return 0;
    }

    /** Releases the tier's references and resources. */
    @Override
    void close();
}
