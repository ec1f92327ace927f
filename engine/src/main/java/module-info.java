/**
 * The KV-cache engine: configuration, chunk keys and hashing, the storage tiers, the paged-KV
 * connectors and the {@code LMCacheEngine} itself. Its packages are exported as they land.
 */
module lmcache4j.engine {
    requires transitive lmcache4j.allocator;
}
