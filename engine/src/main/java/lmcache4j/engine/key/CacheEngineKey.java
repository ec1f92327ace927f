package lmcache4j.engine.key;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import lmcache4j.allocator.DType;

/**
 * The key of one chunk, with LMCache's fields and semantics (spec §5.3): model, world size,
 * worker id, the chunk's prefix-chain hash, the KV dtype, and tags. Tags come from request
 * configs whose names start with {@value #TAG_PREFIX} (prefix removed, order kept); other
 * request configs do not take part in equality or the string form.
 *
 * <p>String form (LMCache 2026): {@code model@world_size@worker_id@<hash hex>@<dtype>[@tag%value]*}.
 * {@link #parse} is its exact inverse.
 *
 * @param modelName the model; must not contain {@code @} (it would break the string form)
 * @param worldSize tensor-parallel world size, at least 1
 * @param workerId  this worker's rank, in {@code [0, worldSize)}
 * @param chunkHash the chunk's prefix-chain hash
 * @param dtype     the KV cache's element type
 * @param tags      tag name → value, in request-config order
 */
public record CacheEngineKey(String modelName, int worldSize, int workerId, ChunkHash chunkHash, DType dtype,
                             Map<String, String> tags) implements CacheKey {

    /** Request configs whose names start with this become tags. */
    public static final String TAG_PREFIX = "lmcache.tag.";

    public CacheEngineKey {
        Objects.requireNonNull(modelName, "modelName");
        Objects.requireNonNull(chunkHash, "chunkHash");
        Objects.requireNonNull(dtype, "dtype");
        if (modelName.isEmpty() || modelName.indexOf('@') >= 0) {
            throw new IllegalArgumentException("model name '" + modelName + "' must be non-empty and contain no '@'");
        }
        if (worldSize < 1 || workerId < 0 || workerId >= worldSize) {
            throw new IllegalArgumentException("worker id " + workerId + " must be in [0, world size " + worldSize + ")");
        }
        for (Map.Entry<String, String> tag : tags.entrySet()) {
            checkTagPart("tag name", tag.getKey());
            checkTagPart("tag value", tag.getValue());
            if (tag.getKey().indexOf('%') >= 0) {
                throw new IllegalArgumentException("tag name '" + tag.getKey() + "' must not contain '%'");
            }
        }
        tags = Collections.unmodifiableMap(new LinkedHashMap<>(tags));
    }

    /** A key without tags. */
    public CacheEngineKey(String modelName, int worldSize, int workerId, ChunkHash chunkHash, DType dtype) {
        this(modelName, worldSize, workerId, chunkHash, dtype, Map.of());
    }

    private static void checkTagPart(String what, String value) {
        if (value == null || value.indexOf('@') >= 0) {
            throw new IllegalArgumentException(what + " '" + value + "' must be non-null and contain no '@'");
        }
    }

    /** The tags of a request's configs: entries named {@value #TAG_PREFIX}{@code <name>}, prefix removed. */
    public static Map<String, String> tagsOf(Map<String, String> requestConfigs) {
        Map<String, String> tags = new LinkedHashMap<>();
        requestConfigs.forEach((k, v) -> {
            if (k.startsWith(TAG_PREFIX)) {
                tags.put(k.substring(TAG_PREFIX.length()), v);
            }
        });
        return tags;
    }

    @Override
    public String toKeyString() {
        StringBuilder sb = new StringBuilder(modelName.length() + 100);
        sb.append(modelName).append('@').append(worldSize).append('@').append(workerId).append('@')
                .append(chunkHash.toHex()).append('@').append(dtype.keyName());
        appendTags(sb, tags);
        return sb.toString();
    }

    static void appendTags(StringBuilder sb, Map<String, String> tags) {
        tags.forEach((k, v) -> sb.append('@').append(k).append('%').append(v));
    }

    @Override
    public CacheEngineKey chunkKey() {
        return this;
    }

    /** This key for another worker (LMCache's {@code with_new_worker_id}). */
    public CacheEngineKey withWorkerId(int newWorkerId) {
        return new CacheEngineKey(modelName, worldSize, newWorkerId, chunkHash, dtype, tags);
    }

    /** The key of layer {@code layerId} of this chunk. */
    public LayerCacheEngineKey layer(int layerId) {
        return new LayerCacheEngineKey(this, layerId);
    }

    /** The keys of layers {@code 0..layers-1} (LMCache's {@code split_layers}). */
    public List<LayerCacheEngineKey> splitLayers(int layers) {
        List<LayerCacheEngineKey> keys = new ArrayList<>(layers);
        for (int i = 0; i < layers; i++) {
            keys.add(layer(i));
        }
        return keys;
    }

    /**
     * Parses a chunk key string. A layer key string (a numeric field after the dtype) is refused
     * here; use {@link CacheKeys#parse} to accept either.
     *
     * @throws IllegalArgumentException naming the string and what is wrong with it
     */
    public static CacheEngineKey parse(String keyString) {
        CacheKey key = CacheKeys.parse(keyString);
        if (key instanceof CacheEngineKey chunk) {
            return chunk;
        }
        throw new IllegalArgumentException("'" + keyString + "' is a layer key, not a chunk key");
    }

    @Override
    public String toString() {
        return toKeyString();
    }
}
