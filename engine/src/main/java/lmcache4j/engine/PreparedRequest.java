package lmcache4j.engine;

import java.util.List;
import java.util.Objects;

import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.TokenDatabase;

/**
 * A request's tokens cut into keyed chunk ranges once, by {@link LMCacheEngine#prepare}: lookup,
 * prefetch, retrieve and store all take it, so a request hashes its prompt once instead of once
 * per call. Immutable and thread-safe; only the engine that prepared it accepts it.
 *
 * <p>{@link #chunks()} covers every token. A mask given to {@code prepare} (one entry per token,
 * {@code F...FT...T}) leaves its {@code False} prefix out of stores and retrieves
 * ({@link #chunksToProcess()}); lookups and prefetches, which take no mask, see every chunk.
 */
public final class PreparedRequest {
    private final TokenDatabase preparedBy;
    private final int tokenCount;
    private final List<ChunkRange> chunks;
    private final int skippedTokens;
    private final List<ChunkRange> toProcess;

    PreparedRequest(TokenDatabase preparedBy, int tokenCount, List<ChunkRange> chunks, int skippedTokens) {
        this.preparedBy = Objects.requireNonNull(preparedBy, "preparedBy");
        this.tokenCount = tokenCount;
        this.chunks = List.copyOf(chunks);
        this.skippedTokens = skippedTokens;
        this.toProcess = this.chunks.stream().filter(r -> r.start() >= skippedTokens).toList();
    }

    /** The request's token count. */
    public int tokenCount() {
        return tokenCount;
    }

    /** Every keyed chunk of the request, in token order. */
    public List<ChunkRange> chunks() {
        return chunks;
    }

    /** How many leading tokens the mask left out of stores and retrieves (0 without a mask). */
    public int skippedTokens() {
        return skippedTokens;
    }

    /** The chunks stores and retrieves work on: those that start at or after {@link #skippedTokens()}. */
    public List<ChunkRange> chunksToProcess() {
        return toProcess;
    }

    /** Whether the engine whose own token database is {@code tokens} prepared this request (whatever keyed it). */
    boolean preparedBy(TokenDatabase tokens) {
        return preparedBy == tokens;
    }

    @Override
    public String toString() {
        return "PreparedRequest[" + tokenCount + " tokens, " + chunks.size() + " chunks"
                + (skippedTokens > 0 ? ", first " + skippedTokens + " tokens masked" : "") + "]";
    }
}
