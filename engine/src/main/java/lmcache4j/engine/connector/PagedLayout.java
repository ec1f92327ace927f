package lmcache4j.engine.connector;

/**
 * How a serving engine lays out one attention layer's paged KV buffer (LMCache spec §7.1). The
 * byte offset of a token's K or V vector follows from the layout, the slot
 * ({@code block × blockSize + offsetInBlock}) and the vector size.
 */
public enum PagedLayout {
    /** vLLM FlashAttention: {@code [2, num_blocks, block_size, num_kv_heads, head_size]}, K/V outermost. */
    FLASH_ATTENTION(2),
    /** FlashInfer: {@code [num_blocks, 2, block_size, num_kv_heads, head_size]}. */
    FLASH_INFER(2),
    /** MLA: {@code [num_blocks, block_size, latent_dim]}, one latent vector per token. */
    MLA(1);

    private final int kvPlanes;

    PagedLayout(int kvPlanes) {
        this.kvPlanes = kvPlanes;
    }

    /** 2 for separate K and V, 1 for MLA's single latent. */
    public int kvPlanes() {
        return kvPlanes;
    }

    /**
     * The byte offset in a layer buffer of plane {@code kv}'s vector for {@code slot}.
     *
     * @param vectorBytes bytes of one token's vector in one plane (heads × head size × dtype, or latent × dtype)
     */
    long offset(int kv, long slot, int numBlocks, int blockSize, long vectorBytes) {
        return switch (this) {
            case FLASH_ATTENTION -> ((long) kv * numBlocks * blockSize + slot) * vectorBytes;
            case FLASH_INFER -> {
                long block = slot / blockSize;
                long inBlock = slot - block * blockSize;
                yield ((block * 2 + kv) * blockSize + inBlock) * vectorBytes;
            }
            case MLA -> slot * vectorBytes;
        };
    }
}
