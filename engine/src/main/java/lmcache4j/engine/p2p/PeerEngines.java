package lmcache4j.engine.p2p;

import java.lang.invoke.MethodHandles;
import java.util.Objects;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;

/**
 * An engine whose P2P tier finds peers through a given {@link PeerLocator} (a fixed set of peers,
 * {@link ProbingPeerLocator}, instead of the cache controller). Only lmcache4j's own modules see
 * this package, as they alone can serve a transfer server for peers to fetch from; the engine
 * hands its factory over here when its class loads, keeping it off the engine's public face.
 */
public final class PeerEngines {
    private static volatile Factory factory;

    private PeerEngines() {
    }

    /** What {@link LMCacheEngine} hands over. */
    @FunctionalInterface
    public interface Factory {
        LMCacheEngine create(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector, PeerLocator locator,
                             String instanceId);
    }

    /**
     * An engine with {@code enable_p2p} whose P2P tier asks {@code locator} which peer holds a chunk
     * this engine misses.
     *
     * @param instanceId this instance's {@code lmcache_instance_id}, never fetched from
     * @throws IllegalArgumentException when the config does not enable P2P or lacks its settings
     */
    public static LMCacheEngine create(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                                       PeerLocator locator, String instanceId) {
        try {
            MethodHandles.lookup().ensureInitialized(LMCacheEngine.class); // its static initialiser hands the factory over
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
        return factory.create(config, metadata, connector, locator, instanceId);
    }

    /** Called by {@link LMCacheEngine} when its class loads, and by nothing else. */
    public static void handOver(Factory engines) {
        if (factory != null) {
            throw new IllegalStateException("the engine's P2P factory was handed over already");
        }
        factory = Objects.requireNonNull(engines, "engines");
    }
}
