package lmcache4j.engine.key;

import java.util.Objects;

/**
 * The key of one layer of a chunk (layerwise mode). String form: the chunk key's with
 * {@code @<layer_id>} right after the dtype, before the tags.
 *
 * @param chunk   the chunk's key
 * @param layerId the layer, from 0
 */
public record LayerCacheEngineKey(CacheEngineKey chunk, int layerId) implements CacheKey {
    public LayerCacheEngineKey {
        Objects.requireNonNull(chunk, "chunk");
        if (layerId < 0) {
            throw new IllegalArgumentException("layer id must be >= 0, was " + layerId);
        }
    }

    @Override
    public String toKeyString() {
        StringBuilder sb = new StringBuilder(100);
        sb.append(chunk.modelName()).append('@').append(chunk.worldSize()).append('@').append(chunk.workerId())
                .append('@').append(chunk.chunkHash().toHex()).append('@').append(chunk.dtype().keyName())
                .append('@').append(layerId);
        CacheEngineKey.appendTags(sb, chunk.tags());
        return sb.toString();
    }

    @Override
    public CacheEngineKey chunkKey() {
        return chunk;
    }

    /** LMCache's {@code get_first_layer}: layer 0 of the same chunk. */
    public LayerCacheEngineKey firstLayer() {
        return new LayerCacheEngineKey(chunk, 0);
    }

    @Override
    public String toString() {
        return toKeyString();
    }
}
