package lmcache4j.engine.connector;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

import lmcache4j.allocator.DType;

/**
 * A serving engine's paged KV cache: one buffer per attention layer in a {@link PagedLayout}, the
 * geometry, and the element type. Buffers are host segments (engines whose KV lives in host memory,
 * and every test) or device addresses wrapped as zero-length segments (CUDA executor).
 *
 * @param layers     one buffer per layer
 * @param layout     the buffers' layout
 * @param numBlocks  blocks per layer buffer
 * @param blockSize  tokens per block
 * @param numKvHeads KV heads (1 for MLA)
 * @param headSize   elements per head (the latent size for MLA)
 * @param dtype      element type
 */
public record PagedKvCache(List<MemorySegment> layers, PagedLayout layout, int numBlocks, int blockSize,
                           int numKvHeads, int headSize, DType dtype) {
    public PagedKvCache {
        Objects.requireNonNull(layout, "layout");
        Objects.requireNonNull(dtype, "dtype");
        layers = List.copyOf(layers);
        if (layers.isEmpty() || numBlocks <= 0 || blockSize <= 0 || numKvHeads <= 0 || headSize <= 0) {
            throw new IllegalArgumentException("a paged KV cache needs at least one layer and positive geometry, got "
                    + layers.size() + " layers, " + numBlocks + " blocks of " + blockSize + ", " + numKvHeads
                    + " heads × " + headSize);
        }
        if (layout == PagedLayout.MLA && numKvHeads != 1) {
            throw new IllegalArgumentException("an MLA cache has one latent per token: numKvHeads must be 1, was " + numKvHeads);
        }
        long expected = layerBytes(layout, numBlocks, blockSize, numKvHeads, headSize, dtype);
        for (int i = 0; i < layers.size(); i++) {
            MemorySegment s = layers.get(i);
            if (s.byteSize() != 0 && s.byteSize() < expected) {
                throw new IllegalArgumentException("layer " + i + " buffer has " + s.byteSize() + " bytes, the layout needs " + expected);
            }
        }
    }

    /** Bytes of one layer buffer. */
    public static long layerBytes(PagedLayout layout, int numBlocks, int blockSize, int numKvHeads, int headSize, DType dtype) {
        return (long) layout.kvPlanes() * numBlocks * blockSize * numKvHeads * headSize * dtype.byteSize();
    }

    /** Slots per layer: {@code numBlocks × blockSize}. */
    public long slots() {
        return (long) numBlocks * blockSize;
    }

    /** Bytes of one token's vector in one plane. */
    public long vectorBytes() {
        return (long) numKvHeads * headSize * dtype.byteSize();
    }

    /** Elements of one token's vector in one plane ({@code hidden}). */
    public int hidden() {
        return numKvHeads * headSize;
    }

    public int layerCount() {
        return layers.size();
    }

    /** Byte offset of plane {@code kv}'s vector for {@code slot} in any layer buffer. */
    public long offset(int kv, long slot) {
        return layout.offset(kv, slot, numBlocks, blockSize, vectorBytes());
    }
}
