package lmcache4j.allocator;

/**
 * How a chunk's bytes are laid out, with LMCache's integer codes (part of the stored format).
 *
 * <p>Token dimension: LMCache's {@code token_dim()} answers 1 for {@code KV_T2D} and 0 for
 * {@code KV_2TD}, the opposite of their layouts, so its token counts for layerwise objects are
 * wrong (often 2). lmcache4j's {@link #tokenDim()} is the real one: 0 for {@code [T, 2, D]} and 1
 * for {@code [2, T, D]}. {@link #lmcacheTokenDim()} keeps LMCache's answer for anyone who must
 * reproduce its counters exactly.
 */
public enum MemoryFormat {
    UNDEFINED(0, 0, 0, -1),
    /** {@code [2, layers, tokens, hidden]}: K/V, all layers of one chunk. */
    KV_2LTD(1, 2, 2, 4),
    /** {@code [tokens, 2, hidden]}: one layer, token-major (layerwise mode). */
    KV_T2D(2, 0, 1, 3),
    /** {@code [2, tokens, hidden]}: one layer (layerwise mode and blending). */
    KV_2TD(3, 1, 0, 3),
    /** Opaque bytes, for example compressed KV. */
    BINARY(4, 0, 0, -1),
    /** A plain byte buffer outside the pinned pool. */
    BINARY_BUFFER(5, 0, 0, -1),
    /** {@code [1, layers, tokens, latent]}: MLA's single latent per token. */
    KV_MLA_FMT(6, 2, 2, 4),
    /** DSA indexer plane, flat per layer-chunk (LMCache 2026). */
    KV_DSA_INDEX_FMT(7, 2, 2, -1);

    private final int code;
    private final int tokenDim;
    private final int lmcacheTokenDim;
    private final int rank;

    MemoryFormat(int code, int tokenDim, int lmcacheTokenDim, int rank) {
        this.code = code;
        this.tokenDim = tokenDim;
        this.lmcacheTokenDim = lmcacheTokenDim;
        this.rank = rank;
    }

    /** LMCache's integer value. */
    public int code() {
        return code;
    }

    /** The dimension of the shape that counts tokens (the correct one, see the class comment). */
    public int tokenDim() {
        return tokenDim;
    }

    /** LMCache's {@code token_dim()}, quirks included. */
    public int lmcacheTokenDim() {
        return lmcacheTokenDim;
    }

    /** Whether this is a KV tensor layout served from the pinned pool. */
    public boolean isKv() {
        return this == KV_2LTD || this == KV_T2D || this == KV_2TD || this == KV_MLA_FMT || this == KV_DSA_INDEX_FMT;
    }

    /** The number of tokens in an object of this format and {@code shape}. */
    public int tokenCount(TensorShape shape) {
        return rank < 0 ? (this == BINARY_BUFFER || this == BINARY ? 1 : shape.dim(0)) : shape.dim(tokenDim);
    }

    /**
     * Checks that {@code shape} fits this format: the rank, and the fixed K/V (or MLA) dimension.
     *
     * @throws IllegalArgumentException naming the format, the shape and the rule broken
     */
    public void validate(TensorShape shape) {
        if (rank > 0 && shape.rank() != rank) {
            throw new IllegalArgumentException(this + " needs a rank-" + rank + " shape, got " + shape);
        }
        int kvDim = switch (this) {
            case KV_2LTD, KV_2TD -> 0;
            case KV_T2D -> 1;
            default -> -1;
        };
        if (kvDim >= 0 && shape.dim(kvDim) != 2) {
            throw new IllegalArgumentException(this + " needs dimension " + kvDim + " = 2 (K and V), got " + shape);
        }
        if (this == KV_MLA_FMT && shape.dim(0) != 1) {
            throw new IllegalArgumentException("KV_MLA_FMT needs dimension 0 = 1 (one latent), got " + shape);
        }
    }

    /** The format with LMCache code {@code code}. */
    public static MemoryFormat fromCode(int code) {
        for (MemoryFormat f : values()) {
            if (f.code == code) {
                return f;
            }
        }
        throw new IllegalArgumentException("unknown memory format code " + code + "; valid: 0-7");
    }
}
