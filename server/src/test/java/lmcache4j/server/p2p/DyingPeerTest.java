package lmcache4j.server.p2p;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.p2p.ProbingPeerLocator;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.server.lm.LmServerLimits;
import org.junit.jupiter.api.Test;

/**
 * A peer whose link breaks after the header and half the chunk of a GET: it dies (closes) or
 * stalls, after a handshake that proved the token. The fetching engine misses within its deadline
 * and leaks nothing (its close checks).
 */
class DyingPeerTest {
    private static final int DEADLINE_MS = 800;

    @Test
    void aPeerThatDiesMidTransferIsAMiss() throws Exception {
        runAgainstBrokenPeer(false);
    }

    @Test
    void aPeerThatStallsMidTransferIsAMissWithinTheDeadline() throws Exception {
        runAgainstBrokenPeer(true);
    }

    private static void runAgainstBrokenPeer(boolean stall) throws Exception {
        int[] tokens = P2pEngines.tokens(stall ? 11 : 12);
        long[] slots = P2pEngines.slots();
        try (Arena arena = Arena.ofShared();
             ProbingPeerLocator nobody = new ProbingPeerLocator(Map.of(), P2pEngines.TOKEN, Duration.ofSeconds(2));
             LMCacheEngine a = P2pEngines.engine(P2pEngines.config(2_000), nobody, "A");
             P2pTransferServer honest = P2pTransferServer.start(a, "127.0.0.1", 0, P2pEngines.TOKEN, LmServerLimits.defaults())) {
            PagedKvCache kv = P2pEngines.cache(arena);
            P2pEngines.fill(kv, tokens, slots);
            a.store(tokens, null, kv, slots, Map.of());
            try (BreakingLink broken = new BreakingLink(honest.port(), stall);
                 // The locator asks the honest server (A holds the chunks); fetches go through the breaking link.
                 ProbingPeerLocator toA = new ProbingPeerLocator(Map.of("A", honest.peerInitUrl()), P2pEngines.TOKEN,
                         Duration.ofSeconds(2));
                 LMCacheEngine b = P2pEngines.engine(P2pEngines.config(DEADLINE_MS),
                         keys -> toA.locate(keys).thenApply(holders -> holders.stream()
                                 .map(h -> new lmcache4j.engine.p2p.PeerHolding(h.instanceId(), h.location(),
                                         h.leadingChunks(), "127.0.0.1:" + broken.port())).toList()), "B")) {
                long t0 = System.nanoTime();
                boolean[] loaded = b.retrieve(tokens, null, P2pEngines.cache(arena), slots, Map.of(), null);
                long millis = (System.nanoTime() - t0) / 1_000_000;
                assertFalse(loaded[0], "nothing loaded from a peer that broke off");
                assertTrue(millis < DEADLINE_MS + 1_500, "missed within the deadline, took " + millis + " ms");
                assertTrue(broken.halfSent() >= 1, "the peer did start sending");
                assertEquals(0, P2pEngines.p2pTier(b).stats().hits());
            }
        }
    }

    /**
     * A link to the honest peer that passes the handshake and the replies without payload, then
     * the header and the first half of a chunk, and breaks: it closes both sides, or goes silent.
     */
    private static final class BreakingLink implements AutoCloseable {
        private final ServerSocketChannel server;
        private final CopyOnWriteArrayList<SocketChannel> open = new CopyOnWriteArrayList<>();
        private final java.util.concurrent.atomic.AtomicInteger halfSent = new java.util.concurrent.atomic.AtomicInteger();

        BreakingLink(int upstreamPort, boolean stall) throws IOException {
            server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread.ofPlatform().daemon().start(() -> {
                while (server.isOpen()) {
                    try {
                        SocketChannel client = server.accept();
                        SocketChannel peer = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), upstreamPort));
                        open.add(client);
                        open.add(peer);
                        Thread.ofVirtual().start(() -> Pump.copy(client, peer));
                        Thread.ofVirtual().start(() -> breakOff(peer, client, stall));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
        }

        private void breakOff(SocketChannel peer, SocketChannel client, boolean stall) {
            try {
                LmProtocol.writeFully(client, ByteBuffer.wrap(LmProtocol.readFully(peer,
                        LmProtocol.SERVER_HEADER_BYTES + LmSession.ANSWER_BYTES)));
                while (true) {
                    byte[] header = LmProtocol.readFully(peer, LmProtocol.SERVER_HEADER_BYTES);
                    int length = LmProtocol.replyLength(header);
                    if (LmProtocol.replyCode(header) != LmProtocol.SUCCESS || length == 0) {
                        LmProtocol.writeFully(client, ByteBuffer.wrap(header));
                        continue;
                    }
                    LmProtocol.writeFully(client, ByteBuffer.wrap(header), ByteBuffer.wrap(LmProtocol.readFully(peer, length / 2)));
                    halfSent.incrementAndGet();
                    if (stall) {
                        Thread.sleep(60_000); // silent, connection open: only the deadline ends the fetch
                    }
                    break;
                }
            } catch (IOException | InterruptedException e) {
                // the test is over
            }
            try {
                client.close(); // dies mid-transfer
                peer.close();
            } catch (IOException ignored) {
                // already closed
            }
        }

        int port() {
            return server.socket().getLocalPort();
        }

        int halfSent() {
            return halfSent.get();
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (SocketChannel c : open) {
                c.close();
            }
        }
    }
}
