package lmcache4j.engine.pd.wire;

import static lmcache4j.engine.pd.wire.PdReceiveServerTest.TOKEN;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.decoder;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.tier;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.remote.lm.LmSession;

/**
 * The receive server's doors: a port that cannot be bound leaves the other one free; a connection
 * over the cap is closed at once, not held until a handshake times out, and the cap of one port
 * leaves the other serving; closing the server closes its ports and the connections
 * it holds without waiting for them; and only a receiver's engine can be served.
 */
class PdReceiveServerDoorsTest {
    private static final byte[] TOKEN_BYTES = TOKEN.getBytes(StandardCharsets.UTF_8);

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Test
    void aTransferPortThatCannotBeBoundIsNamedAndLeavesTheAllocationPortFree() throws Exception {
        try (LMCacheEngine decoder = decoder(1 << 20);
             ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int alloc = freePort();
            IOException e = assertThrows(IOException.class, () -> PdReceiveServer.start(tier(decoder), "127.0.0.1", alloc,
                    taken.getLocalPort(), Optional.of(TOKEN_BYTES), PdReceiveServerTest.TIMEOUT));
            assertTrue(e.getMessage().contains("pd_peer_init_port") && e.getMessage().contains(
                    String.valueOf(taken.getLocalPort())), e.getMessage());
            try (ServerSocket again = new ServerSocket()) { // the allocation port was bound, then let go of
                again.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), alloc));
            }
            // and a start that fails keeps no socket: a supervisor retrying it does not run out of descriptors
            long before = PdConnectionHandshakeTest.openDescriptors();
            for (int i = 0; i < 20; i++) {
                assertThrows(IOException.class, () -> PdReceiveServer.start(tier(decoder), "127.0.0.1", 0,
                        taken.getLocalPort(), Optional.of(TOKEN_BYTES), PdReceiveServerTest.TIMEOUT));
            }
            long grown = PdConnectionHandshakeTest.openDescriptors() - before;
            assertTrue(grown < 5, grown + " more file descriptors open after 20 failed starts");
        }
    }

    @Test
    void aPayloadTagPreferenceThatNamesNoTagFailsTheStartAndBindsNothing() throws Exception {
        String before = System.getProperty(lmcache4j.engine.remote.lm.PayloadTag.PREFERENCE_PROPERTY);
        System.setProperty(lmcache4j.engine.remote.lm.PayloadTag.PREFERENCE_PROPERTY, "gmac");
        try (LMCacheEngine decoder = decoder(1 << 20)) {
            int alloc = freePort();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdReceiveServer.start(tier(decoder),
                    "127.0.0.1", alloc, 0, Optional.of(TOKEN_BYTES), PdReceiveServerTest.TIMEOUT));
            assertEquals("-Dlmcache4j.payload_tag=gmac names no payload tag: poly1305 or aes-gcm", e.getMessage());
            try (ServerSocket again = new ServerSocket()) { // nothing was bound
                again.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), alloc));
            }
        } finally {
            if (before == null) {
                System.clearProperty(lmcache4j.engine.remote.lm.PayloadTag.PREFERENCE_PROPERTY);
            } else {
                System.setProperty(lmcache4j.engine.remote.lm.PayloadTag.PREFERENCE_PROPERTY, before);
            }
        }
    }

    @Test
    void aConnectionOverTheCapIsClosedAtOnceNotWhenAHandshakeWouldTimeOut() throws Exception {
        int flood = 2 * PdReceiveServer.MAX_CONNECTIONS + 8;
        List<SocketChannel> clients = new ArrayList<>();
        try (LMCacheEngine decoder = decoder(1 << 20); PdReceiveServer server = PdReceiveServer.start(decoder)) {
            try {
                for (int i = 0; i < flood; i++) {
                    clients.add(SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                            i % 2 == 0 ? server.allocPort() : server.initPort())));
                }
                long refused = server.stats().refusedConnections();
                for (long deadline = System.nanoTime() + 5_000_000_000L; refused < flood - 2L * PdReceiveServer.MAX_CONNECTIONS
                        && System.nanoTime() < deadline; refused = server.stats().refusedConnections()) {
                    Thread.sleep(5);
                }
                assertTrue(refused >= flood - 2L * PdReceiveServer.MAX_CONNECTIONS, server.stats().toString());
                // Well within the handshake's timeout (1.5 s), the refused ones have been hung up on.
                int hungUp = 0;
                for (SocketChannel c : clients) {
                    c.configureBlocking(false);
                }
                long deadline = System.nanoTime() + 900_000_000L; // the accepted ones time out at 1.5 s
                boolean[] seen = new boolean[flood];
                while (hungUp < refused && System.nanoTime() < deadline) {
                    for (int i = 0; i < flood; i++) {
                        if (!seen[i] && ended(clients.get(i))) {
                            seen[i] = true;
                            hungUp++;
                        }
                    }
                    Thread.sleep(5);
                }
                assertEquals(refused, hungUp, "connections over the cap hung up on within 900 ms");
            } finally {
                for (SocketChannel c : clients) {
                    c.close();
                }
            }
        }
    }

    /** The cap is per port: a stranger who fills the allocation port does not lock senders out of the transfer port. */
    @Test
    void aFloodOfOnePortLeavesTheOtherPortServing() throws Exception {
        int flood = 2 * PdReceiveServer.MAX_CONNECTIONS + 8; // more than both ports' caps together, all on one
        List<SocketChannel> silent = new ArrayList<>();
        try (LMCacheEngine decoder = decoder(1 << 20); PdReceiveServer server = PdReceiveServer.start(decoder)) {
            try {
                for (int i = 0; i < flood; i++) {
                    silent.add(SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.allocPort())));
                }
                for (long deadline = System.nanoTime() + 5_000_000_000L; server.stats().connections()
                        + server.stats().refusedConnections() < flood && System.nanoTime() < deadline; ) {
                    Thread.sleep(5);
                }
                assertEquals(PdReceiveServer.MAX_CONNECTIONS, server.stats().connections(), server.stats().toString());
                assertEquals(flood - PdReceiveServer.MAX_CONNECTIONS, server.stats().refusedConnections(),
                        server.stats().toString());
                // A sender turned away by the full port is told why it may have been.
                LmSession.AuthenticationException full = assertThrows(LmSession.AuthenticationException.class,
                        () -> PdConnection.connect("127.0.0.1", server.allocPort(), TOKEN_BYTES,
                                java.time.Duration.ofSeconds(5), 1 << 20));
                assertTrue(full.getMessage().contains("a server at its limit of connections"), full.getMessage());
                // While the allocation port is full, a sender still proves the token on the transfer port.
                try (PdConnection c = PdConnection.connect("127.0.0.1", server.initPort(), TOKEN_BYTES,
                        java.time.Duration.ofSeconds(5), 1 << 20)) {
                    assertTrue(c.keyed());
                }
                assertEquals(PdReceiveServer.MAX_CONNECTIONS + 1, server.stats().connections(), server.stats().toString());
            } finally {
                for (SocketChannel c : silent) {
                    c.close();
                }
            }
        }
    }

    private static boolean ended(SocketChannel c) {
        try {
            return c.read(ByteBuffer.allocate(64)) < 0;
        } catch (IOException e) {
            return true; // reset
        }
    }

    @Test
    void closingTheServerClosesItsPortsAndTheConnectionsItHoldsWithoutWaitingForThem() throws Exception {
        try (LMCacheEngine decoder = decoder(1 << 20)) {
            PdReceiveServer server = PdReceiveServer.start(decoder);
            int alloc = server.allocPort();
            int init = server.initPort();
            SocketChannel silent = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), init));
            try (silent) {
                for (long deadline = System.nanoTime() + 5_000_000_000L; server.stats().connections() < 1
                        && System.nanoTime() < deadline; ) {
                    Thread.sleep(5);
                }
                long t0 = System.nanoTime();
                server.close();
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(ms < PdReceiveServerTest.TIMEOUT.toMillis() - 500, "close waited " + ms + " ms for a silent "
                        + "connection instead of closing it");
                assertTrue(ended(silent), "the held connection is closed");
                for (int port : new int[] {alloc, init}) {
                    assertThrows(ConnectException.class, () -> SocketChannel.open(new InetSocketAddress(
                            InetAddress.getLoopbackAddress(), port)).close(), "port " + port + " still accepts");
                }
                server.close(); // twice is fine
            }
        }
    }

    /** A stranger who connects and says nothing, or stops halfway through its hello, is hung up on at pd_timeout_ms. */
    @Test
    void aSilentOrStalledHandshakeIsHungUpOnAtTheTimeout() throws Exception {
        try (LMCacheEngine decoder = decoder(1 << 20); PdReceiveServer server = PdReceiveServer.start(decoder);
             SocketChannel silent = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                     server.initPort()));
             SocketChannel stalled = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                     server.allocPort()))) {
            stalled.write(ByteBuffer.wrap(new byte[] {0, 0, 0})); // three bytes of a header, then nothing
            long t0 = System.nanoTime();
            long timeoutMs = PdReceiveServerTest.TIMEOUT.toMillis();
            for (SocketChannel c : List.of(silent, stalled)) {
                c.socket().setSoTimeout((int) (timeoutMs + 3_000));
                int read = c.socket().getInputStream().read(); // blocks until the server hangs up (or 3 s past its timeout)
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertEquals(-1, read, "hung up on, nothing said");
                // not at once, and not much past the timeout (its clock started at the accept, a little before t0)
                assertTrue(ms >= timeoutMs / 2 && ms < timeoutMs + 2_500, "hung up on after " + ms + " ms");
            }
            assertEquals(0, server.stats().authFailures(), "no proof was ever offered");
        }
    }

    /** The tier hands the receive server its room operations once, when its class loads: nobody can swap them after. */
    @Test
    void theTiersRoomsAreHandedOverOnlyOnce() {
        try (LMCacheEngine decoder = decoder(1 << 20)) {
            assertTrue(PdRooms.of(tier(decoder)) != null);
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> PdRooms.handOver(tier -> null));
        assertTrue(e.getMessage().contains("handed over already"), e.getMessage());
    }

    @Test
    void onlyAReceiversEngineCanBeServed() {
        try (LMCacheEngine sender = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", PdReceiveServerTest.CHUNK).set("max_local_cpu_size", 0.02).set("hash_seed", "0")
                .set("enable_pd", true).set("pd_role", "sender").set("pd_buffer_size", (double) (1 << 20))
                .set("pd_buffer_device", "cpu").set("pd_peer_host", "127.0.0.1").set("pd_peer_init_port", List.of(0))
                .set("pd_peer_alloc_port", List.of(0)).set("pd_proxy_host", "127.0.0.1").set("pd_proxy_port", 1)
                .set("extra_config", Map.of("p2p_token", TOKEN)).build(), PdReceiveServerTest.MODEL, KvConnector.host(1),
                List.of())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdReceiveServer.start(sender));
            assertTrue(e.getMessage().contains("pd_role: receiver"), e.getMessage());
        }
    }
}
