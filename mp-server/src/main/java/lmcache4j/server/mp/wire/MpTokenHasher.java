package lmcache4j.server.mp.wire;

import org.bouncycastle.crypto.digests.Blake3Digest;

/**
 * LMCache's MP-server token hashing (docs/design/mp-server.md §5, {@code token_hasher.py} at
 * LMCache commit {@code 0b2a1fcced642ef2863b1f6c576db58116b997a1}): a chain of unkeyed 32-byte
 * BLAKE3 digests, {@code h_i = BLAKE3(h_{i-1} ‖ chunk_i)}, where {@code chunk_i} is the chunk's
 * token ids as big-endian unsigned 32-bit integers and {@code h_{-1}} is {@link #startValue()}.
 * Only full chunks are hashed.
 *
 * <p>The start value is fixed: BLAKE3 of 12 zero bytes, which is what LMCache uses when vLLM is
 * not importable. A Python server with vLLM importable and {@code PYTHONHASHSEED} unset starts
 * from a random value instead, so its L2 hashes are not comparable with anyone's; lmcache4j always
 * uses the fixed one so that its hashes are reproducible.
 *
 * <p>Not thread-safe: it reuses one digest and one buffer, so that hashing allocates nothing per
 * chunk. Use one per session or per thread.
 */
public final class MpTokenHasher {
    /** The digest size: BLAKE3's default 32-byte output. */
    public static final int DIGEST_BYTES = 32;
    /** LMCache's default chunk size in tokens. */
    public static final int DEFAULT_CHUNK_SIZE = 256;

    private static final byte[] START_VALUE = digestOf(new byte[12]);

    private final int chunkSize;
    private final Blake3Digest digest = new Blake3Digest();
    private final byte[] tokenBytes;

    /** A hasher for chunks of {@code chunkSize} tokens. */
    public MpTokenHasher(int chunkSize) {
        if (chunkSize < 1 || chunkSize > (1 << 20)) {
            throw new IllegalArgumentException("chunk size " + chunkSize + " (expected 1.." + (1 << 20) + " tokens)");
        }
        this.chunkSize = chunkSize;
        this.tokenBytes = new byte[4 * chunkSize];
    }

    /** The chunk size in tokens. */
    public int chunkSize() {
        return chunkSize;
    }

    /** The chain's start value {@code h_{-1}}: BLAKE3 of 12 zero bytes (a copy). */
    public static byte[] startValue() {
        return START_VALUE.clone();
    }

    /** The number of full chunks in {@code tokenCount} tokens: a partial tail is never hashed. */
    public int fullChunks(int tokenCount) {
        return tokenCount / chunkSize;
    }

    /**
     * Hashes chunk {@code chunk} of {@code tokens} given the previous digest.
     *
     * @param previous the previous chunk's digest ({@link #startValue()} for chunk 0), at {@code previousOffset}
     * @param tokens the token ids (unsigned 32-bit values); the chunk must be full
     * @param out where the digest goes, at {@code outOffset}
     */
    public void hashChunk(byte[] previous, int previousOffset, int[] tokens, int chunk, byte[] out, int outOffset) {
        int from = chunk * chunkSize;
        if (chunk < 0 || from + chunkSize > tokens.length) {
            throw new IllegalArgumentException("chunk " + chunk + " is not a full chunk of " + tokens.length + " tokens");
        }
        for (int i = 0; i < chunkSize; i++) {
            int token = tokens[from + i];
            int b = 4 * i;
            tokenBytes[b] = (byte) (token >>> 24);
            tokenBytes[b + 1] = (byte) (token >>> 16);
            tokenBytes[b + 2] = (byte) (token >>> 8);
            tokenBytes[b + 3] = (byte) token;
        }
        digest.update(previous, previousOffset, DIGEST_BYTES);
        digest.update(tokenBytes, 0, tokenBytes.length);
        digest.doFinal(out, outOffset);
    }

    /** Every full chunk's digest from token 0, concatenated ({@code 32 × fullChunks} bytes). */
    public byte[] hashAll(int[] tokens) {
        int chunks = fullChunks(tokens.length);
        byte[] out = new byte[chunks * DIGEST_BYTES];
        for (int c = 0; c < chunks; c++) {
            if (c == 0) {
                hashChunk(START_VALUE, 0, tokens, 0, out, 0);
            } else {
                hashChunk(out, (c - 1) * DIGEST_BYTES, tokens, c, out, c * DIGEST_BYTES);
            }
        }
        return out;
    }

    /** Checks a token id LMCache could pack as {@code >I}: {@code [0, 2^32)}; returns it as an int's bits. */
    public static int checkToken(long token) {
        if (token < 0 || token > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("token id " + token + " is outside [0, 2^32)");
        }
        return (int) token;
    }

    /** One-shot unkeyed BLAKE3 of {@code input} (32 bytes). */
    public static byte[] digestOf(byte[] input) {
        Blake3Digest d = new Blake3Digest();
        d.update(input, 0, input.length);
        byte[] out = new byte[DIGEST_BYTES];
        d.doFinal(out, 0);
        return out;
    }
}
