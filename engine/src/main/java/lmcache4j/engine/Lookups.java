package lmcache4j.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.TokenDatabase;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.TieredPrefix;

/**
 * Lookups: how much of a request's prefix the tiers hold (pinning it for the retrieve when asked),
 * and LMCache's asynchronous lookup, which comes as controller keys ({@link ControllerKeys}) the
 * lookup service resolves against the chunks this engine keyed.
 */
final class Lookups {
    private final LMCacheEngineConfig config;
    private final ModelMetadata metadata;
    private final TokenDatabase tokens;
    private final StorageManager storage;
    private final EngineMetrics metrics;
    private final LookupPins lookupPins;
    private final Prefetches prefetches;
    /** Controller keys ↔ digests, for the control plane; null without a controller or lookup service. */
    private final ControllerKeys.Index controllerKeys;

    Lookups(LMCacheEngineConfig config, ModelMetadata metadata, TokenDatabase tokens, StorageManager storage,
            EngineMetrics metrics, LookupPins lookupPins, Prefetches prefetches, ControllerKeys.Index controllerKeys) {
        this.config = config;
        this.metadata = metadata;
        this.tokens = tokens;
        this.storage = storage;
        this.metrics = metrics;
        this.lookupPins = lookupPins;
        this.prefetches = prefetches;
        this.controllerKeys = controllerKeys;
    }

    /** How many leading tokens are cached; with {@code lookupId}, pins them (replacing its earlier pins). */
    int lookup(PreparedRequest request, String lookupId) {
        List<ChunkRange> ranges = request.chunks();
        boolean layerwise = config.useLayerwise();
        int perChunk = layerwise ? metadata.numLayers() : 1;
        List<CacheKey> keys = new ArrayList<>(ranges.size() * perChunk);
        for (ChunkRange r : ranges) {
            if (layerwise) {
                keys.addAll(r.key().splitLayers(perChunk)); // a chunk is cached when all its layers are
            } else {
                keys.add(r.key());
            }
        }
        boolean pin = lookupId != null;
        if (pin) {
            lookupPins.release(lookupId); // a repeated lookup replaces the previous pins
        }
        TieredPrefix prefix = storage.batchedContains(keys, pin);
        if (pin) {
            lookupPins.put(lookupId, prefix);
            storage.touchCache();
        }
        int chunks = prefix.hits() / perChunk;
        int hitTokens = chunks == 0 ? 0 : ranges.get(chunks - 1).end();
        metrics.recordLookup(request.tokenCount(), hitTokens);
        return hitTokens;
    }

    /** See {@link LMCacheEngine#asyncLookupAndPrefetch}. */
    CompletableFuture<Integer> asyncLookupAndPrefetch(String lookupId, long[] foldedHashes, int[] chunkTokens,
                                                      Map<String, String> requestConfigs) {
        Objects.requireNonNull(lookupId, "lookupId");
        Objects.requireNonNull(requestConfigs, "requestConfigs");
        if (controllerKeys == null || !config.enableAsyncLoading()) {
            throw new IllegalStateException("asynchronous lookups need enable_async_loading: true");
        }
        if (foldedHashes.length != chunkTokens.length) {
            throw new IllegalArgumentException(foldedHashes.length + " chunk hashes but " + chunkTokens.length
                    + " chunk token counts");
        }
        List<ChunkHash> hashes = new ArrayList<>(foldedHashes.length);
        for (long key : foldedHashes) {
            Optional<ChunkHash> hash = controllerKeys.digest(key);
            if (hash.isEmpty()) {
                break; // never hashed here: no tier can hold it under a key this engine knows
            }
            hashes.add(hash.get());
        }
        List<ChunkRange> ranges = tokens.processHashes(hashes, Arrays.copyOf(chunkTokens, hashes.size()),
                requestConfigs);
        if (config.useLayerwise()) {
            // Layerwise chunks are stored per layer: answer with a pinned lookup the retrieve releases.
            int hitTokens = lookup(new PreparedRequest(this.tokens, ChunkRanges.tokensIn(ranges), ranges, 0), lookupId);
            return CompletableFuture.completedFuture(hitTokens);
        }
        return prefetches.start(ranges, lookupId);
    }

    /**
     * Keys a request's chunks for the control plane (its controller reports, the lookup service,
     * P2P lookups): under LMCache's scheme the keys chain over {@code tokens}.
     */
    void remember(int[] tokens, List<ChunkRange> ranges) {
        if (controllerKeys == null || ranges.isEmpty()
                || controllerKeys.key(ranges.getLast().key().chunkHash()).isPresent()) {
            return; // a prompt keyed before (its last chunk's key chains over all the others)
        }
        long[] keys = ControllerKeys.of(controllerKeys.scheme(), this.tokens.hasher(), tokens, ranges);
        for (int i = 0; i < keys.length; i++) {
            controllerKeys.record(ranges.get(i).key().chunkHash(), keys[i]);
        }
    }

    /**
     * Keys chunks whose digests the caller computed (no tokens): only vLLM's scheme can, since
     * LMCache's keys come from the tokens.
     */
    void rememberDigests(List<ChunkRange> ranges) {
        if (controllerKeys != null && controllerKeys.scheme() == ControllerKeys.Scheme.VLLM) {
            for (ChunkRange r : ranges) {
                controllerKeys.record(r.key().chunkHash(), ControllerKeys.vllmFold(r.key().chunkHash()));
            }
        }
    }

    /** The control-plane key of a chunk this engine keyed, when known. */
    OptionalLong controllerKey(ChunkHash digest) {
        return controllerKeys == null ? OptionalLong.empty() : controllerKeys.key(digest);
    }
}
