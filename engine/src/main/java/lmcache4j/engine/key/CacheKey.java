package lmcache4j.engine.key;

/** What the storage tiers index: a whole chunk's key or one layer of it. */
public sealed interface CacheKey permits CacheEngineKey, LayerCacheEngineKey {
    /** The key's string form, as LMCache writes it (file names, Redis keys). */
    String toKeyString();

    /** The chunk this key belongs to (itself for a chunk key). */
    CacheEngineKey chunkKey();
}
