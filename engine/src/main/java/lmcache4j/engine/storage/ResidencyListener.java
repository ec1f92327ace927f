package lmcache4j.engine.storage;

import lmcache4j.engine.key.CacheKey;

/**
 * Told when a chunk enters or leaves a tier (the cache controller's worker is one listener).
 * Called on the thread that changed the tier, often with the tier's lock held: an implementation
 * must return at once, never block, never throw, and never call back into the tier.
 */
public interface ResidencyListener {
    /** A listener that ignores everything. */
    ResidencyListener NONE = new ResidencyListener() {
        @Override
        public void admitted(String tier, CacheKey key) {
        }

        @Override
        public void evicted(String tier, CacheKey key) {
        }
    };

    /** {@code key} is now held by {@code tier} (a tier's {@link StorageBackend#name()}). */
    void admitted(String tier, CacheKey key);

    /** {@code key} is no longer held by {@code tier} (evicted, removed or cleared). */
    void evicted(String tier, CacheKey key);
}
