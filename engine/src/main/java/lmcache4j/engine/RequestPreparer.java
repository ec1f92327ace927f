package lmcache4j.engine;

import java.util.List;
import java.util.Map;

import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.TokenDatabase;
import lmcache4j.engine.metrics.EngineMetrics;

/**
 * Cuts a request into keyed chunks once, and hands each prompt's chunks to those that keep
 * something per chunk: the control-plane keys ({@link Lookups}) and the KV events' token lists.
 */
final class RequestPreparer {
    private final TokenDatabase tokens;
    private final EngineMetrics metrics;
    private final Lookups lookups;
    private final EngineControlPlane controlPlane;

    RequestPreparer(TokenDatabase tokens, EngineMetrics metrics, Lookups lookups, EngineControlPlane controlPlane) {
        this.tokens = tokens;
        this.metrics = metrics;
        this.lookups = lookups;
        this.controlPlane = controlPlane;
    }

    /** {@code tokenIds} prepared with a checked {@code mask}, or none when it is null. */
    PreparedRequest prepare(int[] tokenIds, boolean[] mask, Map<String, String> requestConfigs) {
        int skipped = mask == null ? 0 : tokens.maskedPrefix(mask, tokenIds.length);
        List<ChunkRange> chunks = tokens.processTokens(tokenIds, requestConfigs);
        metrics.recordHashed(tokenIds.length);
        lookups.remember(tokenIds, chunks);
        controlPlane.remember(tokenIds, chunks);
        return new PreparedRequest(tokens, tokenIds.length, chunks, skipped);
    }

    /**
     * {@code tokenIds} keyed by another database (segments beside prefix chunks), with a checked
     * {@code mask} or none: accepted by this engine, but kept from the control plane, whose keys
     * chain over prefix blocks.
     */
    PreparedRequest prepareKeyedBy(TokenDatabase keying, int[] tokenIds, boolean[] mask, Map<String, String> requestConfigs) {
        int skipped = mask == null ? 0 : keying.maskedPrefix(mask, tokenIds.length);
        List<ChunkRange> chunks = keying.processTokens(tokenIds, requestConfigs);
        metrics.recordHashed(tokenIds.length);
        return new PreparedRequest(tokens, tokenIds.length, chunks, skipped);
    }

    /**
     * Chunks whose hashes the caller computed (LMCache's hashes + offsets mode): consecutive ranges
     * of {@code lengths[i]} tokens from token 0.
     */
    PreparedRequest fromHashes(List<ChunkHash> hashes, int[] lengths, Map<String, String> requestConfigs) {
        List<ChunkRange> ranges = tokens.processHashes(hashes, lengths, requestConfigs);
        lookups.rememberDigests(ranges);
        return new PreparedRequest(tokens, ranges.isEmpty() ? 0 : ranges.getLast().end(), ranges, 0);
    }
}
