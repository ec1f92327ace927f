package lmcache4j.engine.key;

import java.util.ArrayList;
import java.util.List;

/**
 * LMCache's {@code ChunkedTokenDatabase} (spec §5.1): tokens in consecutive chunks of
 * {@code chunkSize}, each keyed by the prefix hash chain, so a chunk's key names the whole prefix
 * up to its end and a lookup can stop at the first miss. The chain is LMCache's current integer
 * chain or the older digest chain, as {@link StorageKeys} says.
 *
 * <ul>
 *   <li>The final shorter chunk is kept only with {@code saveUnfullChunk}; otherwise trailing
 *       tokens are dropped (LMCache's config default is false).</li>
 *   <li>With a mask, the number of leading {@code False} entries must be a multiple of the chunk
 *       size (LMCache raises ValueError otherwise); chunks starting in that prefix are left out of
 *       the result but still hashed, because every later hash chains through them.</li>
 * </ul>
 */
public final class ChunkedTokenDatabase extends TokenDatabase {
    private final int chunkSize;
    private final boolean saveUnfullChunk;

    /**
     * A database whose keys carry LMCache's current integer hashes ({@link StorageKeys#LMCACHE}).
     *
     * @param chunkSize       tokens per chunk, at least 1 (LMCache's default is 256)
     * @param saveUnfullChunk whether a final chunk shorter than {@code chunkSize} is kept
     * @param hasher          the hash function and seed
     * @param keys            the engine identity the keys carry
     */
    public ChunkedTokenDatabase(int chunkSize, boolean saveUnfullChunk, ChunkHasher hasher, KeyFactory keys) {
        this(chunkSize, saveUnfullChunk, hasher, keys, StorageKeys.defaultForm());
    }

    /**
     * As above, with the keys' hash form: {@code storage_chunk_keys}.
     */
    public ChunkedTokenDatabase(int chunkSize, boolean saveUnfullChunk, ChunkHasher hasher, KeyFactory keys,
                                StorageKeys form) {
        super(hasher, keys, form);
        if (chunkSize < 1) {
            throw new IllegalArgumentException("chunk size must be at least 1 token, was " + chunkSize);
        }
        this.chunkSize = chunkSize;
        this.saveUnfullChunk = saveUnfullChunk;
    }

    /** Tokens per chunk. */
    public int chunkSize() {
        return chunkSize;
    }

    /** Whether a final shorter chunk is kept. */
    public boolean saveUnfullChunk() {
        return saveUnfullChunk;
    }

    @Override
    void checkSkip(int skipBefore) {
        if (skipBefore % chunkSize != 0) {
            throw new IllegalArgumentException("the mask's " + skipBefore + " leading False entries are not a multiple "
                    + "of the chunk size " + chunkSize + "; only whole chunks can be skipped");
        }
    }

    @Override
    List<HashRange> hashRanges(int[] tokens, int skipBefore) {
        checkSkip(skipBefore);
        int end = saveUnfullChunk ? tokens.length : tokens.length - tokens.length % chunkSize;
        // The whole chain at once: a long prompt's chain is hashed on two threads (ChainPipeline).
        // Skipped chunks still feed the chain; only their ranges are left out.
        List<ChunkHash> chain = hasher().chain(tokens, chunkSize, saveUnfullChunk, storageKeys());
        List<HashRange> ranges = new ArrayList<>(Math.max(0, (end - skipBefore + chunkSize - 1) / chunkSize));
        for (int c = skipBefore / chunkSize; c < chain.size(); c++) {
            int start = c * chunkSize;
            ranges.add(new HashRange(start, Math.min(start + chunkSize, end), chain.get(c)));
        }
        return ranges;
    }

    @Override
    public String toString() {
        return "ChunkedTokenDatabase[chunk " + chunkSize + (saveUnfullChunk ? ", partial last chunk kept" : "")
                + ", " + hasher() + ", " + storageKeys().configName() + " keys]";
    }
}
