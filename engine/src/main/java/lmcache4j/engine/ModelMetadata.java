package lmcache4j.engine;

import java.util.Objects;

import lmcache4j.allocator.DType;

/**
 * What the engine must know of the model and its place in the serving deployment (LMCache's
 * {@code LMCacheMetadata}, spec §5.3).
 *
 * @param modelName  the model, as it appears in keys
 * @param worldSize  tensor-parallel world size
 * @param workerId   this worker's rank
 * @param kvDtype    the KV cache's element type
 * @param numLayers  attention layers
 * @param numKvHeads KV heads per layer on this worker (1 for MLA)
 * @param headSize   elements per head (the latent size for MLA)
 * @param mla        whether the model uses multi-head latent attention
 */
public record ModelMetadata(String modelName, int worldSize, int workerId, DType kvDtype, int numLayers,
                            int numKvHeads, int headSize, boolean mla) {
    public ModelMetadata {
        Objects.requireNonNull(modelName, "modelName");
        Objects.requireNonNull(kvDtype, "kvDtype");
        if (numLayers <= 0 || numKvHeads <= 0 || headSize <= 0) {
            throw new IllegalArgumentException("layers, KV heads and head size must be positive, got "
                    + numLayers + ", " + numKvHeads + ", " + headSize);
        }
        if (mla && numKvHeads != 1) {
            throw new IllegalArgumentException("an MLA model has one latent per token: numKvHeads must be 1, was " + numKvHeads);
        }
        if (worldSize < 1 || workerId < 0 || workerId >= worldSize) {
            throw new IllegalArgumentException("worker id " + workerId + " must be in [0, world size " + worldSize + ")");
        }
    }

    /** Bytes of one full chunk of {@code chunkSize} tokens in KV_2LTD (or KV_MLA_FMT). */
    public long chunkBytes(int chunkSize) {
        return (mla ? 1L : 2L) * numLayers * chunkSize * numKvHeads * headSize * kvDtype.byteSize();
    }
}
