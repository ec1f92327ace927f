package lmcache4j.engine;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.engine.controller.WorkerControls;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.storage.ResidencyListener;
import lmcache4j.engine.storage.StorageBackend;

/** What the cache controller may do to one engine (its control messages), in the engine's terms. */
final class EngineControls implements WorkerControls {
    private final LMCacheEngine engine;
    private final Lookups lookups;
    private final AtomicLong moves = new AtomicLong();

    EngineControls(LMCacheEngine engine, Lookups lookups) {
        this.engine = engine;
        this.lookups = lookups;
    }

    @Override
    public void setResidencyListener(ResidencyListener listener) {
        engine.storage().setResidencyListener(listener);
    }

    @Override
    public OptionalLong controllerKey(ChunkHash digest) {
        return lookups.controllerKey(digest);
    }

    @Override
    public Map<String, List<CacheKey>> residentKeys() {
        return engine.storage().residentKeys();
    }

    @Override
    public List<String> tierNames() {
        return engine.storage().tierNames();
    }

    @Override
    public OptionalLong clear(String location) {
        return engine.storage().tier(location).map(t -> OptionalLong.of(t.clear())).orElse(OptionalLong.empty());
    }

    @Override
    public OptionalLong pin(String location, int[] tokens) {
        Optional<StorageBackend> tier = engine.storage().tier(location);
        if (tier.isEmpty()) {
            return OptionalLong.empty();
        }
        List<ChunkRange> ranges = engine.prepare(tokens, Map.of()).chunks();
        int pinned = tier.get().batchedContains(ChunkRanges.keysOf(ranges), true);
        return OptionalLong.of(pinned == 0 ? 0 : ranges.get(pinned - 1).end());
    }

    @Override
    public CompletableFuture<Integer> prefetchToCpu(int[] tokens) {
        String requestId = "controller-move-" + moves.incrementAndGet();
        // The chunks stay in the CPU tier; the prefetch's own hold on them is not needed.
        return engine.prefetch(tokens, Map.of(), requestId).whenComplete((n, e) -> engine.releasePrefetch(requestId));
    }

    @Override
    public int health() {
        return engine.health();
    }
}
