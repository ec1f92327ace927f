package lmcache4j.engine.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.config.P2pSettings;
import lmcache4j.engine.config.PdSettings;

/**
 * The token an engine's P2P and PD channels prove: its {@code p2p_token} when set, else the one
 * its deployment secret derives, the same for every member and for both channels, and no other
 * secret the file derives.
 */
class PeerTransferTokenTest {
    private static final String TOKEN = "s3cret-of-16-chars";

    private static ConfigLoader.Builder p2p() {
        return ConfigLoader.builder().environment(Map.of("LMCACHE_ENABLE_P2P", "true", "LMCACHE_P2P_HOST", "127.0.0.1",
                "LMCACHE_P2P_INIT_PORTS", "8200"));
    }

    private static ConfigLoader.Builder pd() {
        return ConfigLoader.builder().environment(Map.of()).set("enable_pd", true).set("pd_role", "receiver")
                .set("pd_buffer_size", 1073741824.0).set("pd_buffer_device", "cpu").set("pd_peer_host", "127.0.0.1")
                .set("pd_peer_init_port", List.of(7300)).set("pd_peer_alloc_port", List.of(7400));
    }

    private static String p2pToken(LMCacheEngineConfig c) {
        return DeploymentSecret.p2pToken(c, c.p2p().orElseThrow());
    }

    private static String pdToken(LMCacheEngineConfig c) {
        return DeploymentSecret.pdToken(c, c.pd().orElseThrow());
    }

    @Test
    void aSetTokenIsUsedAsItIs(@TempDir Path dir) throws Exception {
        DeploymentSecret.createFile(dir.resolve("secret"));
        String file = dir.resolve("secret").toString();
        Map<String, Object> extra = Map.of("p2p_token", TOKEN);
        assertEquals(TOKEN, p2pToken(p2p().set("extra_config", extra).build()));
        assertEquals(TOKEN, pdToken(pd().set("extra_config", extra).build()));
        assertEquals(TOKEN, p2pToken(p2p().set("extra_config", extra).set("deployment_secret_file", file).build()),
                "p2p_token wins over the secret's token");
    }

    @Test
    void withoutOneTheSecretDerivesTheSameTokenForEveryMemberAndBothChannels(@TempDir Path dir) throws Exception {
        DeploymentSecret secret = DeploymentSecret.createFile(dir.resolve("secret"));
        DeploymentSecret other = DeploymentSecret.createFile(dir.resolve("other"));
        String file = dir.resolve("secret").toString();
        String derived = p2pToken(p2p().set("deployment_secret_file", file).build());
        assertEquals(secret.peerTransferToken(), derived);
        assertEquals(DeploymentSecret.fromFile(dir.resolve("secret")).peerTransferToken(), derived, "every member alike");
        assertEquals(derived, pdToken(pd().set("deployment_secret_file", file).build()), "one token for every peer transfer");
        assertTrue(derived.length() >= 16, "as long as a p2p_token must be: " + derived.length());
        assertNotEquals(other.peerTransferToken(), derived, "another deployment, another token");
        assertNotEquals(secret.bearerToken(), derived, "not the HTTP bearer token");
    }
    /** Settings made by hand, without the config check that demands one of the two: the error names both. */
    @Test
    void neitherATokenNorASecretIsAnErrorNamingBoth() {
        LMCacheEngineConfig p2pConfig = p2p().set("extra_config", Map.of("p2p_token", TOKEN)).build();
        P2pSettings p2p = p2pConfig.p2p().orElseThrow();
        P2pSettings p2pWithout = new P2pSettings(p2p.host(), p2p.initPorts(), p2p.timeout(), Optional.empty(), p2p.connections());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> DeploymentSecret.p2pToken(p2pConfig, p2pWithout));
        assertEquals("P2P settings without p2p_token or deployment_secret_file", e.getMessage());

        LMCacheEngineConfig pdConfig = pd().set("extra_config", Map.of("p2p_token", TOKEN)).build();
        PdSettings pd = pdConfig.pd().orElseThrow();
        PdSettings pdWithout = new PdSettings(pd.role(), pd.bufferBytes(), pd.peerHost(), pd.peerInitPorts(), pd.peerAllocPorts(),
                pd.proxyHost(), pd.proxyPort(), Optional.empty(), pd.timeout(), pd.unclaimedTtl());
        e = assertThrows(IllegalStateException.class, () -> DeploymentSecret.pdToken(pdConfig, pdWithout));
        assertEquals("PD settings without p2p_token or deployment_secret_file", e.getMessage());
    }
}
