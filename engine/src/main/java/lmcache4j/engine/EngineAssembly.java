package lmcache4j.engine;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkedTokenDatabase;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.key.KeyFactory;
import lmcache4j.engine.key.StorageKeys;
import lmcache4j.engine.metrics.EngineMetrics;

/** The parts an engine is assembled from that its config alone decides. */
final class EngineAssembly {
    private EngineAssembly() {
    }

    /** Chunks keyed for the control plane at most (about 24 MiB of heap when full). */
    static final int CONTROLLER_KEYS_CAPACITY = 1 << 18;

    /**
     * The controller keys of the chunks this engine hashes, when a controller, lookup service or
     * P2P lookup needs them ({@code enable_controller} or {@code enable_async_loading}); else null.
     */
    static ControllerKeys.Index controllerKeys(LMCacheEngineConfig config) {
        if (!config.enableController() && !config.enableAsyncLoading()) {
            return null;
        }
        return new ControllerKeys.Index(ControllerKeys.Scheme.fromName(config.controllerChunkKeys()), CONTROLLER_KEYS_CAPACITY);
    }

    /** LMCache's chunked token database for this config and model: chunk size, hash, seed, key fields. */
    static ChunkedTokenDatabase tokenDatabase(LMCacheEngineConfig config, ModelMetadata metadata) {
        ChunkHasher hasher = ChunkHasher.of(HashAlgorithm.fromName(config.preCachingHashAlgorithm()), config.hashSeed());
        KeyFactory keys = new KeyFactory(metadata.modelName(), metadata.worldSize(), metadata.workerId(), metadata.kvDtype());
        return new ChunkedTokenDatabase(config.chunkSize(), config.saveUnfullChunk(), hasher, keys,
                StorageKeys.fromName(config.storageChunkKeys()));
    }

    /** lmcache4j's own copy metrics, read from the connector when the metrics are scraped. */
    static void bindCopyMetrics(EngineMetrics metrics, KvConnector connector) {
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:host_copy_bytes",
                "Bytes the connector copied between the paged KV cache and host memory on the host (lmcache4j)", true,
                connector::hostCopiedBytes));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:host_copy_streamed_bytes",
                "Of lmcache4j:host_copy_bytes, the bytes written with streaming (non-temporal) stores (lmcache4j)", true,
                connector::streamedBytes));
    }

    /** The engine's start-up log line: model, tiers, pool, how copies run, chunk size. */
    static String describe(LMCacheEngine engine) {
        ModelMetadata m = engine.metadata();
        KvConnector c = engine.connector();
        return "lmcache4j engine for " + m.modelName() + " (worker " + m.workerId() + "/" + m.worldSize() + "): tiers "
                + engine.storage().tierNames() + ", CPU pool " + engine.storage().memoryCapacityBytes() + " bytes, copies on "
                + c.executorName() + " (" + c.copyThreads() + " thread(s) per chunk, streaming stores " + c.streamingStores()
                + "), chunk " + engine.config().chunkSize() + " tokens";
    }
}
