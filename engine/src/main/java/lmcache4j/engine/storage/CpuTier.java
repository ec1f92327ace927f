package lmcache4j.engine.storage;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;

/**
 * The first tier (LMCache's {@code LocalCPUBackend}): the hot cache in host memory, searched first,
 * whose allocator gives memory to every tier's objects. {@link StorageManager#cpu()} returns the
 * engine's; its counters are what a service watches to size {@code max_local_cpu_size}.
 */
public interface CpuTier extends AllocatorBackend {
    /** Keeps {@code obj} under {@code key} with the tier's own reference, unless the key is held already. */
    void submitPut(CacheKey key, MemoryObj obj);

    /** Chunks held now. */
    int size();

    /** Chunks evicted to make room, since creation. */
    long evictions();

    /** Times an allocation needed room and nothing could be evicted (every chunk pinned or in use). */
    long evictionFailures();

    /** The eviction policy's LMCache name ({@code cache_policy}). */
    String policyName();

    /** Checks the tier's and its allocator's invariants; throws when one does not hold. */
    void memcheck();
}
