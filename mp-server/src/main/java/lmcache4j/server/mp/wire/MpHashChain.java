package lmcache4j.server.mp.wire;

import java.util.Arrays;

/**
 * A session's cached chunk-hash chain (LMCache's per-request hash cache,
 * {@code session.py} at LMCache commit {@code 0aef92b1cab10e0375d0e8a6724a2aa1c36847ac}). Each
 * call of a request sends the whole token sequence again, usually longer by a few chunks; the
 * chain hashes only the chunks after the longest unchanged prefix of whole chunks, and rehashes
 * from the first changed chunk when an earlier token differs. The result always equals
 * {@link MpTokenHasher#hashAll} of the latest sequence.
 *
 * <p>Not thread-safe (one per session). The digests live in one flat array, so steady-state
 * updates allocate only when the chain outgrows its capacity.
 */
public final class MpHashChain {
    private final MpTokenHasher hasher;
    private int[] tokens = new int[0];
    private byte[] hashes = new byte[0];
    private int chunks;
    private int lastHashed;

    /** An empty chain for chunks of {@code chunkSize} tokens. */
    public MpHashChain(int chunkSize) {
        this.hasher = new MpTokenHasher(chunkSize);
    }

    /** The chunk size in tokens. */
    public int chunkSize() {
        return hasher.chunkSize();
    }

    /**
     * Makes the chain describe {@code newTokens}: keeps the digests of the leading whole chunks
     * that did not change and hashes the rest. A partial tail chunk is not hashed.
     *
     * @return how many chunks this call hashed
     */
    public int update(int[] newTokens) {
        int chunkSize = hasher.chunkSize();
        int newChunks = hasher.fullChunks(newTokens.length);
        int compared = Math.min(chunks, newChunks) * chunkSize;
        int mismatch = Arrays.mismatch(tokens, 0, compared, newTokens, 0, compared);
        int kept = (mismatch < 0 ? compared : mismatch) / chunkSize;
        ensureCapacity(newChunks);
        System.arraycopy(newTokens, kept * chunkSize, tokens, kept * chunkSize, (newChunks - kept) * chunkSize);
        byte[] start = MpTokenHasher.startValue();
        for (int c = kept; c < newChunks; c++) {
            if (c == 0) {
                hasher.hashChunk(start, 0, newTokens, 0, hashes, 0);
            } else {
                hasher.hashChunk(hashes, (c - 1) * MpTokenHasher.DIGEST_BYTES, newTokens, c, hashes,
                        c * MpTokenHasher.DIGEST_BYTES);
            }
        }
        chunks = newChunks;
        lastHashed = newChunks - kept;
        return lastHashed;
    }

    private void ensureCapacity(int newChunks) {
        int tokenCount = newChunks * hasher.chunkSize();
        if (tokens.length < tokenCount) {
            tokens = Arrays.copyOf(tokens, Math.max(tokenCount, tokens.length + tokens.length / 2));
        }
        int hashBytes = newChunks * MpTokenHasher.DIGEST_BYTES;
        if (hashes.length < hashBytes) {
            hashes = Arrays.copyOf(hashes, Math.max(hashBytes, hashes.length + hashes.length / 2));
        }
    }

    /** The number of full chunks the chain holds. */
    public int chunkCount() {
        return chunks;
    }

    /** How many chunks the last {@link #update} hashed (the rest were reused). */
    public int lastHashed() {
        return lastHashed;
    }

    /** Chunk {@code chunk}'s digest (a copy). */
    public byte[] hash(int chunk) {
        checkChunk(chunk);
        int from = chunk * MpTokenHasher.DIGEST_BYTES;
        return Arrays.copyOfRange(hashes, from, from + MpTokenHasher.DIGEST_BYTES);
    }

    /** Copies chunk {@code chunk}'s digest into {@code out} at {@code offset}, without allocating. */
    public void copyHash(int chunk, byte[] out, int offset) {
        checkChunk(chunk);
        System.arraycopy(hashes, chunk * MpTokenHasher.DIGEST_BYTES, out, offset, MpTokenHasher.DIGEST_BYTES);
    }

    private void checkChunk(int chunk) {
        if (chunk < 0 || chunk >= chunks) {
            throw new IndexOutOfBoundsException("chunk " + chunk + " of a " + chunks + "-chunk chain");
        }
    }
}
