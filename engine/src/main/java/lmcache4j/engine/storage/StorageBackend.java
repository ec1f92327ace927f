package lmcache4j.engine.storage;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;

/**
 * One storage tier (LMCache spec §3.1). Reference rules: a tier that keeps an object takes its own
 * reference ({@link MemoryObj#retain()}); the caller of a put keeps (and later drops) its own; every
 * object a get returns carries one reference that the caller must release. Prefix semantics: the
 * batched lookups stop at the first missing key and never report a hole.
 *
 * <p>Implementations are thread-safe.
 */
public interface StorageBackend extends AutoCloseable {

    /** The tier's name (LMCache's class names: {@code LocalCPUBackend}, {@code LocalDiskBackend}, ...). */
    String name();

    /** Whether the tier holds {@code key}; with {@code pin}, also pins the stored object. */
    boolean contains(CacheKey key, boolean pin);

    /** Whether a put of {@code key} is still in flight; check together with {@link #contains}. */
    boolean existsInPutTasks(CacheKey key);

    /**
     * Stores {@code objs[i]} under {@code keys[i]}, possibly asynchronously; later lookups see the
     * result. Keys already stored are skipped. The caller's references stay the caller's.
     */
    void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs);

    /** The object under {@code key}, with a reference for the caller, or empty. */
    Optional<MemoryObj> getBlocking(CacheKey key);

    /** The objects of the longest prefix of {@code keys} the tier holds, each with a reference for the caller. */
    default List<MemoryObj> batchedGetBlocking(List<? extends CacheKey> keys) {
        List<MemoryObj> found = new ArrayList<>(keys.size());
        for (CacheKey key : keys) {
            Optional<MemoryObj> obj = getBlocking(key);
            if (obj.isEmpty()) {
                break;
            }
            found.add(obj.get());
        }
        return found;
    }

    /** How many leading keys the tier holds; with {@code pin}, pins each of them. */
    default int batchedContains(List<? extends CacheKey> keys, boolean pin) {
        int hits = 0;
        for (CacheKey key : keys) {
            if (!contains(key, pin)) {
                break;
            }
            hits++;
        }
        return hits;
    }

    /** Pins the stored object; false if absent. */
    boolean pin(CacheKey key);

    /** Undoes one pin of the stored object; false if absent or not pinned. */
    boolean unpin(CacheKey key);

    /** Removes {@code key}, dropping the tier's reference; false if absent. */
    boolean remove(CacheKey key);

    /** Removes each key; returns how many were present. */
    default int batchedRemove(List<? extends CacheKey> keys) {
        int removed = 0;
        for (CacheKey key : keys) {
            if (remove(key)) {
                removed++;
            }
        }
        return removed;
    }

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
