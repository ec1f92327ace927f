package lmcache4j.engine.storage;

import java.util.List;

import lmcache4j.allocator.MemoryObj;

/**
 * What a {@link StorageManager#prefetch} made ready: the leading {@code chunks} keys are in the CPU
 * tier, and {@code loaded} are the objects it read from lower tiers for them, each with one
 * reference for the caller to hold until the retrieve (so they are not evicted first) and then drop.
 *
 * @param chunks how many leading keys are in the CPU tier now
 * @param loaded the objects the prefetch brought up, each with a reference for the caller
 */
public record PrefetchedPrefix(int chunks, List<MemoryObj> loaded) {
    public PrefetchedPrefix {
        if (chunks < 0) {
            throw new IllegalArgumentException("chunks must be >= 0, was " + chunks);
        }
        loaded = List.copyOf(loaded);
    }
}
