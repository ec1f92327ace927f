package lmcache4j.engine.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

class P2pSettingsTest {
    @Test
    void offUnlessEnabled() {
        assertTrue(ConfigLoader.builder().environment(Map.of()).build().p2p().isEmpty());
    }

    @Test
    void readsLmcacheNamesAndExtraConfig() {
        LMCacheEngineConfig c = ConfigLoader.builder().environment(Map.of("LMCACHE_ENABLE_P2P", "true",
                        "LMCACHE_P2P_HOST", "10.0.0.7", "LMCACHE_P2P_INIT_PORTS", "8200,8201"))
                .set("extra_config", Map.of("p2p_timeout_ms", 750, "p2p_token", "s3cret-of-16-chars", "p2p_connections", 2)).build();
        P2pSettings p2p = c.p2p().orElseThrow();
        assertEquals("10.0.0.7", p2p.host());
        assertEquals(8201, p2p.portOf(1));
        assertEquals(Duration.ofMillis(750), p2p.timeout());
        assertEquals(Optional.of("s3cret-of-16-chars"), p2p.token());
        assertEquals(2, p2p.connections());
        IllegalArgumentException noPort = assertThrows(IllegalArgumentException.class, () -> p2p.portOf(2));
        assertTrue(noPort.getMessage().contains("no port for worker 2"), noPort.getMessage());
    }

    @Test
    void withoutATokenP2pIsRefusedSayingHowToMakeOne() {
        LMCacheEngineConfig none = ConfigLoader.builder().environment(Map.of()).set("enable_p2p", true)
                .set("p2p_host", "127.0.0.1").set("p2p_init_ports", List.of(0)).build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, none::p2p);
        assertTrue(e.getMessage().startsWith("enable_p2p needs a P2P token") && e.getMessage().contains("extra_config.p2p_token")
                && e.getMessage().contains("deployment_secret_file") && e.getMessage().contains("forged KV"), e.getMessage());
        LMCacheEngineConfig weak = ConfigLoader.builder().environment(Map.of()).set("enable_p2p", true)
                .set("p2p_host", "127.0.0.1").set("p2p_init_ports", List.of(0))
                .set("extra_config", Map.of("p2p_token", "guess")).build();
        assertEquals("extra_config.p2p_token has 5 characters; use at least 16 (make one with: head -c 32 /dev/urandom | base64)",
                assertThrows(IllegalArgumentException.class, weak::p2p).getMessage());
        LMCacheEngineConfig withSecret = ConfigLoader.builder().environment(Map.of()).set("enable_p2p", true)
                .set("p2p_host", "127.0.0.1").set("p2p_init_ports", List.of(0))
                .set("deployment_secret_file", "/run/secrets/lmcache4j").build();
        assertTrue(withSecret.p2p().orElseThrow().token().isEmpty(), "the deployment secret derives the token");
    }

    @Test
    void anEngineWithP2pButNoControllerIsRefusedSayingWhatToDo() {
        LMCacheEngineConfig c = ConfigLoader.builder().environment(Map.of()).set("enable_p2p", true)
                .set("p2p_host", "127.0.0.1").set("p2p_init_ports", List.of(0)).set("max_local_cpu_size", 0.01)
                .set("extra_config", Map.of("p2p_token", "s3cret-of-16-chars")).build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> lmcache4j.engine.LMCacheEngine.create(c,
                new lmcache4j.engine.ModelMetadata("m", 1, 0, lmcache4j.allocator.DType.FLOAT16, 2, 2, 8, false),
                lmcache4j.engine.connector.KvConnector.host(), List.of()));
        assertTrue(e.getMessage().contains("enable_controller"), e.getMessage());
    }

    @Test
    void enabledWithoutHostOrPortsSaysWhatIsMissing() {
        LMCacheEngineConfig noHost = ConfigLoader.builder().environment(Map.of()).set("enable_p2p", true)
                .set("p2p_init_ports", List.of(8200)).set("extra_config", Map.of("p2p_token", "s3cret-of-16-chars")).build();
        assertTrue(assertThrows(IllegalArgumentException.class, noHost::p2p).getMessage().contains("p2p_host"));
        LMCacheEngineConfig noPorts = ConfigLoader.builder().environment(Map.of()).set("enable_p2p", true)
                .set("p2p_host", "127.0.0.1").set("extra_config", Map.of("p2p_token", "s3cret-of-16-chars")).build();
        assertTrue(assertThrows(IllegalArgumentException.class, noPorts::p2p).getMessage().contains("p2p_init_ports"));
    }
}
