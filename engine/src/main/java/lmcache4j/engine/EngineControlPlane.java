package lmcache4j.engine;

import java.util.List;
import java.util.Optional;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.controller.ControllerWorker;
import lmcache4j.engine.events.KvEvents;
import lmcache4j.engine.events.KvEventsSettings;
import lmcache4j.engine.key.ChunkRange;

/**
 * What an engine tells the world about its chunks, each part optional: vLLM-style KV events
 * ({@code kv_events_*}) and the cache controller's worker ({@code enable_controller}), which also
 * carries the controller's commands to the engine.
 */
final class EngineControlPlane implements AutoCloseable {
    private volatile KvEvents events;
    private volatile ControllerWorker worker;

    /** Starts the parts {@code engine}'s config enables; the engine closes them when this fails. */
    void start(LMCacheEngine engine, Lookups lookups) {
        LMCacheEngineConfig config = engine.config();
        KvEventsSettings.from(config).ifPresent(settings -> {
            events = KvEvents.start(settings, config.chunkSize(), engine.tokenDatabase().hasher());
            engine.storage().setResidencyListener(events);
        });
        if (config.enableController()) {
            worker = ControllerWorker.start(config, engine.metadata().workerId(),
                    new EngineControls(engine, lookups));
            worker.publishMetrics(engine.metrics());
        }
    }

    /** Keeps a prepared prompt's tokens per chunk, which KV events carry. */
    void remember(int[] tokens, List<ChunkRange> chunks) {
        KvEvents published = events;
        if (published != null) {
            published.remember(tokens, chunks);
        }
    }

    /** After a clear: an AllBlocksCleared event when every tier is empty. */
    void cleared(LMCacheEngine engine) {
        KvEvents published = events;
        if (published != null && engine.storage().residentKeys().values().stream().allMatch(List::isEmpty)) {
            published.allCleared();
        }
    }

    Optional<ControllerWorker> worker() {
        return Optional.ofNullable(worker);
    }

    /**
     * Deregisters from the controller before the tiers' closing removals would be reported, then
     * publishes the events still queued (the tiers' closing removals are not events).
     */
    @Override
    public void close() {
        ControllerWorker w = worker;
        if (w != null) {
            w.close();
        }
        KvEvents e = events;
        if (e != null) {
            e.close();
        }
    }
}
