package lmcache4j.engine.pd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;

/**
 * The decoder's public face: it starts only on a PD receiver's engine, names the ports it bound in
 * its peer, says which setting to change when a port is taken, and feeds the engine's own PD tier.
 * (Chunks pushed through it, end to end: {@code PdReceiveServerTest} and the consumer project's
 * {@code PdExample}.)
 */
@Timeout(60)
class PdReceiverTest {
    private static final ModelMetadata MODEL = new ModelMetadata("pd/receiver", 1, 0, DType.FLOAT32, 2, 2, 16, false);

    private static ConfigLoader.Builder decoder(int initPort, int allocPort) {
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256).set("max_local_cpu_size", 0.02)
                .set("enable_pd", true).set("pd_role", "receiver").set("pd_buffer_size", (double) (4 << 20))
                .set("pd_buffer_device", "cpu").set("pd_peer_host", "127.0.0.1")
                .set("pd_peer_init_port", List.of(initPort)).set("pd_peer_alloc_port", List.of(allocPort))
                .set("extra_config", Map.of("p2p_token", "pd-receiver-test-token-0123"));
    }

    @Test
    void itServesTheEnginesOwnTierOnThePortsItNamesInItsPeer() throws Exception {
        try (LMCacheEngine engine = LMCacheEngine.create(decoder(0, 0).build(), MODEL, KvConnector.host(1), List.of());
             PdReceiver receiver = PdReceiver.start(engine)) {
            PdPeer peer = receiver.peer();
            assertEquals("127.0.0.1", peer.host());
            assertTrue(peer.initPort() > 0 && peer.allocPort() > 0 && peer.initPort() != peer.allocPort(), peer.toString());
            assertTrue(receiver.tier() == engine.storage().tier(PdBackend.NAME).orElseThrow(), "the engine's own PD tier");
            assertEquals(new PdReceiver.Stats(0, 0, 0, 0, 0, 0, 0), receiver.stats());
        }
    }

    @Test
    void closingItClosesBothPorts() throws Exception {
        try (LMCacheEngine engine = LMCacheEngine.create(decoder(0, 0).build(), MODEL, KvConnector.host(1), List.of())) {
            PdReceiver receiver = PdReceiver.start(engine);
            PdPeer peer = receiver.peer();
            receiver.close();
            receiver.close(); // twice is fine
            for (int port : new int[] {peer.initPort(), peer.allocPort()}) {
                assertThrows(java.net.ConnectException.class, () -> new java.net.Socket(InetAddress.getLoopbackAddress(), port)
                        .close(), "port " + port + " still open after close");
            }
        }
    }

    @Test
    void anEngineThatIsNoPdReceiverIsRefusedNamingTheSettings() {
        try (LMCacheEngine engine = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.02).build(), MODEL, KvConnector.host(1), List.of())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdReceiver.start(engine));
            assertTrue(e.getMessage().contains("enable_pd and pd_role: receiver"), e.getMessage());
        }
    }

    @Test
    void aTakenPortIsReportedNamingTheSettingToChange() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             LMCacheEngine engine = LMCacheEngine.create(decoder(0, taken.getLocalPort()).build(), MODEL,
                     KvConnector.host(1), List.of())) {
            java.io.IOException e = assertThrows(java.io.IOException.class, () -> PdReceiver.start(engine));
            assertTrue(e.getMessage().contains(taken.getLocalPort() + " (pd_peer_alloc_port)"), e.getMessage());
        }
    }
}
