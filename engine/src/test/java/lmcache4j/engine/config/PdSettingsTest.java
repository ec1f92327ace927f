package lmcache4j.engine.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;

/**
 * LMCache's PD settings as lmcache4j reads them: its names and deprecated {@code nixl_*} aliases,
 * its rules (PD forces {@code save_unfull_chunk}, excludes P2P), and every missing piece refused with
 * what to set, the token included.
 */
class PdSettingsTest {
    private static final Map<String, Object> TOKEN = Map.of("p2p_token", "s3cret-of-16-chars");

    private static ConfigLoader.Builder receiver() {
        return ConfigLoader.builder().environment(Map.of()).set("enable_pd", true).set("pd_role", "receiver")
                .set("pd_buffer_size", 1073741824.0).set("pd_buffer_device", "cpu").set("pd_peer_host", "10.0.0.9")
                .set("pd_peer_init_port", List.of(7300, 7301)).set("pd_peer_alloc_port", List.of(7400, 7401))
                .set("extra_config", TOKEN);
    }

    @Test
    void offUnlessEnabled() {
        assertTrue(LMCacheEngineConfig.defaults().pd().isEmpty());
    }

    @Test
    void aReceiverReadsLmcacheNamesPerWorkerAndForcesUnfullChunks() {
        LMCacheEngineConfig c = receiver().build();
        PdSettings pd = c.pd().orElseThrow();
        assertEquals(PdSettings.Role.RECEIVER, pd.role());
        assertEquals(1L << 30, pd.bufferBytes());
        assertEquals(Optional.of("10.0.0.9"), pd.peerHost());
        assertEquals(7301, pd.initPortOf(1));
        assertEquals(7401, pd.allocPortOf(1));
        assertEquals(Duration.ofMillis(5_000), pd.timeout());
        assertEquals(Duration.ofMillis(60_000), pd.unclaimedTtl());
        assertTrue(c.saveUnfullChunk(), "enable_pd forces save_unfull_chunk, as in LMCache");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> pd.initPortOf(2)).getMessage()
                .contains("pd_peer_init_port [7300, 7301] has no port for worker 2"));
    }

    @Test
    void aSenderReadsTheDeprecatedNixlNamesAsTheirPdNames() {
        LMCacheEngineConfig c = ConfigLoader.builder().environment(Map.of("LMCACHE_ENABLE_XPYD", "true",
                        "LMCACHE_NIXL_ROLE", "sender", "LMCACHE_NIXL_BUFFER_SIZE", "1048576", "LMCACHE_PD_BUFFER_DEVICE", "cpu",
                        "LMCACHE_NIXL_PROXY_HOST", "proxy", "LMCACHE_NIXL_PROXY_PORT", "7500", "LMCACHE_TRANSFER_CHANNEL", "tcp"))
                .set("extra_config", Map.of("p2p_token", "s3cret-of-16-chars", "pd_timeout_ms", 750)).build();
        PdSettings pd = c.pd().orElseThrow();
        assertEquals(PdSettings.Role.SENDER, pd.role());
        assertEquals(Optional.of("proxy"), pd.proxyHost());
        assertEquals(OptionalInt.of(7500), pd.proxyPort());
        assertEquals(Duration.ofMillis(750), pd.timeout());
        assertTrue(c.warnings().stream().anyMatch(w -> w.contains("enable_xpyd")), c.warnings().toString());
    }

    @Test
    void aSenderWithoutAProxyIsAnEmbeddersAndTellsNoProxy() {
        PdSettings pd = receiver().set("pd_role", "sender").build().pd().orElseThrow();
        assertEquals(PdSettings.Role.SENDER, pd.role());
        assertEquals(Optional.empty(), pd.proxyHost());
        assertEquals(OptionalInt.empty(), pd.proxyPort());
    }

    @Test
    void eachMissingPieceIsNamed() {
        assertMessage(ConfigLoader.builder().environment(Map.of()).set("enable_pd", true), "enable_pd needs pd_role");
        assertMessage(receiver().set("pd_buffer_size", Optional.empty()), "enable_pd needs pd_buffer_size");
        assertMessage(receiver().set("pd_buffer_device", Optional.empty()), "enable_pd needs pd_buffer_device: cpu");
        assertMessage(receiver().set("pd_peer_host", Optional.empty()), "pd_role receiver needs pd_peer_host");
        assertMessage(receiver().set("pd_peer_alloc_port", Optional.empty()), "pd_role receiver needs pd_peer_init_port and "
                + "pd_peer_alloc_port");
        assertMessage(receiver().set("pd_peer_alloc_port", List.of(7400)), "must have one entry per worker each");
        assertMessage(receiver().set("pd_role", "sender").set("pd_proxy_host", "127.0.0.1"),
                "pd_proxy_host and pd_proxy_port go together");
        assertMessage(receiver().set("pd_peer_init_port", List.of(7300, 70000)), "0..65535");
    }

    @Test
    void withoutATokenPdIsRefusedSayingHowToMakeOne() {
        assertMessage(receiver().set("extra_config", Map.of()), "enable_pd needs a token");
        assertMessage(receiver().set("extra_config", Map.of("p2p_token", "short")), "extra_config.p2p_token has 5 characters");
        LMCacheEngineConfig secret = receiver().set("extra_config", Map.of()).set("deployment_secret_file", "/run/s").build();
        assertTrue(secret.pd().orElseThrow().token().isEmpty(), "the deployment secret derives the token");
    }

    @Test
    void pdAndP2pTogetherAreRefusedAtLoad() {
        ConfigException e = assertThrows(ConfigException.class, () -> receiver().set("enable_p2p", true).build());
        assertTrue(e.getMessage().contains("enable_pd (code) and enable_p2p (code) cannot both be true"), e.getMessage());
    }

    @Test
    void nixlIsRefusedNamingTheChannelThatExists() {
        ConfigException e = assertThrows(ConfigException.class, () -> receiver().set("transfer_channel", "nixl").build());
        assertTrue(e.getMessage().contains("transfer_channel = \"nixl\" (code) is not valid: NIXL (GPU RDMA) is not supported "
                + "by lmcache4j; its one channel is tcp"), e.getMessage());
    }

    private static void assertMessage(ConfigLoader.Builder b, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.build().pd());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }
}
