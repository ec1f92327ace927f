package lmcache4j.engine.p2p;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;

/** The engine's P2P factory reaches lmcache4j's modules once, from the engine itself. */
class PeerEnginesTest {
    private static final ModelMetadata MODEL = new ModelMetadata("m", 1, 0, DType.FLOAT16, 2, 2, 64, false);

    @Test
    void theFactoryIsHandedOverByTheEngineAndCannotBeReplaced() {
        try (ProbingPeerLocator nobody = new ProbingPeerLocator(Map.of(), Optional.empty(), Duration.ofSeconds(1))) {
            // no enable_p2p: the engine's own factory answers (a replaced one would not know the setting)
            assertEquals("an engine with peers needs enable_p2p (with p2p_host and p2p_init_ports) in the config",
                    assertThrows(IllegalArgumentException.class, () -> PeerEngines.create(ConfigLoader.builder()
                            .environment(Map.of()).build(), MODEL, KvConnector.host(), nobody, "a")).getMessage());
        }
        assertEquals("the engine's P2P factory was handed over already", assertThrows(IllegalStateException.class,
                () -> PeerEngines.handOver((config, metadata, connector, locator, id) -> null)).getMessage());
    }
}
