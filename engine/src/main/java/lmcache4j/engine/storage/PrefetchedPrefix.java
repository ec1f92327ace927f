package lmcache4j.engine.storage;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;

/**
 * What a {@link StorageManager#prefetch} made ready: the leading {@code keys} of the request, each
 * with its object in the CPU tier, and one reference per object for the caller. Holding those
 * references keeps the objects from eviction until the retrieve uses them; the caller drops each
 * exactly once.
 *
 * @param keys        the leading keys of the request that are ready, in order
 * @param objects     {@code objects[i]} holds {@code keys[i]}, with a reference for the caller
 * @param chunksByTier tier name → how many of the chunks came from it (the CPU tier's are those
 *                    that were there already)
 */
public record PrefetchedPrefix(List<CacheKey> keys, List<MemoryObj> objects, Map<String, Integer> chunksByTier) {
    public PrefetchedPrefix {
        keys = List.copyOf(keys);
        objects = List.copyOf(objects);
        chunksByTier = Collections.unmodifiableMap(new LinkedHashMap<>(chunksByTier));
        if (keys.size() != objects.size()) {
            throw new IllegalArgumentException(keys.size() + " keys but " + objects.size() + " objects");
        }
    }

    /** Nothing ready. */
    public static PrefetchedPrefix empty() {
        return new PrefetchedPrefix(List.of(), List.of(), Map.of());
    }

    /** How many leading keys are ready. */
    public int chunks() {
        return keys.size();
    }
}
