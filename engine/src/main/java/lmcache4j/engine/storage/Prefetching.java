package lmcache4j.engine.storage;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;

/**
 * A tier that can load a chunk ahead of a retrieve without blocking the caller (the disk tier, on
 * its I/O threads). Offered through {@link StorageBackend#prefetching()}; the
 * {@link StorageManager} writes what it loads into the CPU tier.
 */
public interface Prefetching {

    /**
     * Loads {@code key} into memory from the tier's {@link MemoryProvider}, never waiting for memory.
     * Completes with the object and a reference for the caller, or empty when the chunk is absent,
     * unreadable, or no memory can be had right now; never completes exceptionally.
     */
    CompletableFuture<Optional<MemoryObj>> prefetch(CacheKey key);
}
