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
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.p2p.ProbingPeerLocator;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.server.lm.LmChunkStore;
import lmcache4j.server.lm.LmServerLimits;
import org.junit.jupiter.api.Test;

/**
 * A peer that answers a GET with the real header and half the chunk, then dies (closes) or stalls:
 * the fetching engine misses within its deadline and leaks nothing (its close checks).
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
             ProbingPeerLocator nobody = new ProbingPeerLocator(Map.of(), Optional.empty(), Duration.ofSeconds(2));
             LMCacheEngine a = P2pEngines.engine(P2pEngines.config(Optional.empty(), 2_000), nobody, "A");
             P2pTransferServer honest = P2pTransferServer.start(a, "127.0.0.1", 0, Optional.empty(), LmServerLimits.defaults())) {
            PagedKvCache kv = P2pEngines.cache(arena);
            P2pEngines.fill(kv, tokens, slots);
            a.store(tokens, null, kv, slots, Map.of());
            EngineTierStore store = new EngineTierStore(java.util.List.of(a.storage().cpu()));
            try (BrokenPeer broken = new BrokenPeer(store, stall);
                 // The locator asks the honest server (A holds the chunks); fetches go to the broken one.
                 ProbingPeerLocator toA = new ProbingPeerLocator(Map.of("A", honest.peerInitUrl()), Optional.empty(),
                         Duration.ofSeconds(2));
                 LMCacheEngine b = P2pEngines.engine(P2pEngines.config(Optional.empty(), DEADLINE_MS),
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

    /** Answers each GET with the true header and the first half of the payload, then closes or goes silent. */
    private static final class BrokenPeer implements AutoCloseable {
        private final ServerSocketChannel server;
        private final CopyOnWriteArrayList<SocketChannel> open = new CopyOnWriteArrayList<>();
        private final java.util.concurrent.atomic.AtomicInteger halfSent = new java.util.concurrent.atomic.AtomicInteger();
        private final Thread acceptor;

        BrokenPeer(LmChunkStore store, boolean stall) throws IOException {
            server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            acceptor = Thread.ofPlatform().daemon().start(() -> {
                while (server.isOpen()) {
                    try {
                        SocketChannel c = server.accept();
                        open.add(c);
                        Thread.ofVirtual().start(() -> serveOne(c, store, stall));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
        }

        private void serveOne(SocketChannel c, LmChunkStore store, boolean stall) {
            try {
                LmProtocol.ClientHeader h = LmProtocol.decodeClient(LmProtocol.readFully(c, LmProtocol.CLIENT_HEADER_BYTES));
                Optional<LmChunkStore.Lease> lease = store.lease(h.key());
                if (lease.isEmpty()) {
                    LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(LmProtocol.FAIL)));
                    return;
                }
                try (LmChunkStore.Lease l = lease.get()) {
                    ByteBuffer payload = l.payload()[0];
                    payload.limit((int) (l.length() / 2));
                    LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(LmProtocol.SUCCESS, l.metadata(), l.replyLocation())),
                            payload);
                }
                halfSent.incrementAndGet();
                if (stall) {
                    Thread.sleep(60_000); // silent, connection open: only the deadline ends the fetch
                }
                c.close(); // dies mid-transfer
            } catch (IOException | InterruptedException e) {
                // the test is over
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
