package lmcache4j.engine.key;

import java.util.Map;
import java.util.Objects;

import lmcache4j.allocator.DType;

/**
 * Builds a chunk's {@link CacheEngineKey} from its hash and this engine's identity, as LMCache's
 * {@code _make_key_by_hash} does from the engine metadata (spec §5.1).
 *
 * @param modelName the served model; non-empty, no {@code @}
 * @param worldSize tensor-parallel world size, at least 1
 * @param workerId  this worker's rank, in {@code [0, worldSize)}
 * @param kvDtype   the KV cache's element type
 */
public record KeyFactory(String modelName, int worldSize, int workerId, DType kvDtype) {
    private static final ChunkHash PROBE = ChunkHash.fromHex("00");

    public KeyFactory {
        Objects.requireNonNull(modelName, "modelName");
        Objects.requireNonNull(kvDtype, "kvDtype");
        // The key's own checks, once here rather than on the first chunk of the first request.
        new CacheEngineKey(modelName, worldSize, workerId, PROBE, kvDtype);
    }

    /** The key of a chunk with this hash and no tags. */
    public CacheEngineKey key(ChunkHash hash) {
        return new CacheEngineKey(modelName, worldSize, workerId, hash, kvDtype);
    }

    /** The key of a chunk with this hash and these tags (see {@link CacheEngineKey#tagsOf}). */
    public CacheEngineKey key(ChunkHash hash, Map<String, String> tags) {
        return new CacheEngineKey(modelName, worldSize, workerId, hash, kvDtype, tags);
    }
}
