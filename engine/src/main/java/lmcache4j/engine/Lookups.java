package lmcache4j.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.TokenDatabase;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.TieredPrefix;

/**
 * Lookups: how much of a request's prefix the tiers hold (pinning it for the retrieve when asked),
 * and LMCache's asynchronous lookup, which comes as folded chunk hashes the lookup service resolves
 * against the digests this engine hashed.
 */
final class Lookups {
    private final LMCacheEngineConfig config;
    private final ModelMetadata metadata;
    private final TokenDatabase tokens;
    private final StorageManager storage;
    private final EngineMetrics metrics;
    private final LookupPins lookupPins;
    private final Prefetches prefetches;
    /** Folded chunk hashes → digests, for the lookup service; null unless {@code enable_async_loading}. */
    private final FoldedHashIndex foldedHashes;

    Lookups(LMCacheEngineConfig config, ModelMetadata metadata, TokenDatabase tokens, StorageManager storage,
            EngineMetrics metrics, LookupPins lookupPins, Prefetches prefetches, FoldedHashIndex foldedHashes) {
        this.config = config;
        this.metadata = metadata;
        this.tokens = tokens;
        this.storage = storage;
        this.metrics = metrics;
        this.lookupPins = lookupPins;
        this.prefetches = prefetches;
        this.foldedHashes = foldedHashes;
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
        if (this.foldedHashes == null) {
            throw new IllegalStateException("asynchronous lookups need enable_async_loading: true");
        }
        if (foldedHashes.length != chunkTokens.length) {
            throw new IllegalArgumentException(foldedHashes.length + " chunk hashes but " + chunkTokens.length
                    + " chunk token counts");
        }
        List<ChunkHash> hashes = new ArrayList<>(foldedHashes.length);
        for (long fold : foldedHashes) {
            Optional<ChunkHash> hash = this.foldedHashes.resolve(fold);
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

    /** Remembers the folds of hashed chunks, for {@link #asyncLookupAndPrefetch}. */
    void remember(List<ChunkRange> ranges) {
        if (foldedHashes != null) {
            for (ChunkRange r : ranges) {
                foldedHashes.record(r.key().chunkHash());
            }
        }
    }
}
