package lmcache4j.engine.pd.wire;

import static lmcache4j.engine.pd.wire.PdReceiveServerTest.CHUNK;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.MODEL;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.TOKEN;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.decoder;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.push;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.pusher;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.tier;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.pd.PlanarKv;

/**
 * The sender at its edges: chunks larger than a message frame (a real model's) travel whole; a
 * receiver restarted on the same ports is reached on a fresh connection; an allocation answer out
 * of protocol stops the request with every chunk counted and its staging freed; a write into room
 * that expired meanwhile is refused and stops its request; a request's chunk
 * list and a receiver's ports are checked; {@code finish} returns as soon as the last chunk is
 * acknowledged, not at its bound; and a closed sender refuses new requests and has let go of its
 * staging.
 */
class PdPusherEdgesTest {
    private static final Duration BOUND = Duration.ofSeconds(20);

    @Test
    void chunksOfSeveralMebibytesArePushedWholeAndRetrievedByteForByte() throws Exception {
        // 2 × 4 layers × 256 positions × 4 heads × 64 floats: 2 MiB a chunk, twice the largest message frame
        ModelMetadata big = new ModelMetadata("pd/big", 1, 0, DType.FLOAT32, 4, 4, 64, false);
        int chunk = 256;
        long chunkBytes = big.chunkBytes(chunk);
        assertEquals(2 << 20, chunkBytes);
        try (Arena arena = Arena.ofShared();
             LMCacheEngine decoder = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of())
                     .set("chunk_size", chunk).set("max_local_cpu_size", 0.05).set("hash_seed", "0").set("enable_pd", true)
                     .set("pd_role", "receiver").set("pd_buffer_size", (double) (4 * chunkBytes))
                     .set("pd_buffer_device", "cpu").set("pd_peer_host", "127.0.0.1").set("pd_peer_init_port", List.of(0))
                     .set("pd_peer_alloc_port", List.of(0)).set("extra_config", Map.of("p2p_token", TOKEN, "pd_timeout_ms",
                             10_000)).build(), big, KvConnector.host(1), List.of());
             PdReceiveServer server = PdReceiveServer.start(decoder);
             PdPusher pusher = new PdPusher(TensorMemoryAllocator.strict("staging", 4 * chunkBytes, 4096), big, chunk,
                     Optional.of(TOKEN.getBytes(StandardCharsets.UTF_8)), Duration.ofSeconds(10), Optional.empty(), 0)) {
            int[] tokens = tokens(2 * chunk, 41);
            PlanarKv kv = new PlanarKv(arena, big, 2 * chunk, 42);
            PreparedRequest r = decoder.prepare(tokens, Map.of());
            PdPusher.Transfer t = pusher.begin("big", r.chunks(), new PdPusher.Peer("127.0.0.1", server.initPort(),
                    server.allocPort()));
            t.pushComputed(kv, tokens.length);
            PdPusher.Result result = assertTimeoutPreemptively(BOUND, t::finish);
            assertEquals(2, result.pushedChunks(), result.stopReason().orElse(""));
            assertEquals(2 * chunkBytes, result.pushedBytes());
            PreparedRequest again = decoder.prepare(tokens, Map.of());
            assertEquals(2 * chunk, decoder.lookup(again, "l1"));
            PlanarKv into = new PlanarKv(arena, big, 2 * chunk, 0);
            boolean[] loaded = decoder.retrieve(again, into, "l1");
            for (boolean b : loaded) {
                assertTrue(b, "every position loaded");
            }
            assertEquals(-1, into.all.mismatch(kv.all), "the decoder's KV is the sender's, byte for byte");
        }
    }

    @Test
    void aReceiverRestartedOnTheSamePortsIsReachedOnAFreshConnection() throws Exception {
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdPusher pusher = pusher(MODEL, Optional.of(TOKEN))) {
            int[] first = tokens(3 * CHUNK, 51);
            int[] second = tokens(3 * CHUNK, 52);
            PlanarKv kv = new PlanarKv(arena, MODEL, 3 * CHUNK, 53);
            int allocPort;
            int initPort;
            try (PdReceiveServer server = PdReceiveServer.start(decoder)) {
                allocPort = server.allocPort();
                initPort = server.initPort();
                assertEquals(3, push(pusher, decoder, server, first, kv, "before").pushedChunks());
            } // the sender keeps its connections: both now closed by the receiver
            try (PdReceiveServer again = PdReceiveServer.start(tier(decoder), "127.0.0.1", allocPort, initPort,
                    Optional.of(TOKEN.getBytes(StandardCharsets.UTF_8)), PdReceiveServerTest.TIMEOUT)) {
                PdPusher.Result r = assertTimeoutPreemptively(BOUND, () -> push(pusher, decoder, again, second, kv, "after"));
                assertEquals(3, r.pushedChunks(), r.stopReason().orElse("no reason"));
                assertEquals(Optional.empty(), r.stopReason());
                assertEquals(3, again.stats().writes());
            }
        }
    }

    @Test
    void aSendersKeptConnectionsOutliveTheFrameTimeoutBetweenRequests() throws Exception {
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdPusher pusher = pusher(MODEL, Optional.of(TOKEN));
             PdReceiveServer server = PdReceiveServer.start(tier(decoder), "127.0.0.1", 0, 0,
                     Optional.of(TOKEN.getBytes(StandardCharsets.UTF_8)), Duration.ofMillis(500))) {
            PlanarKv kv = new PlanarKv(arena, MODEL, 3 * CHUNK, 61);
            assertEquals(3, push(pusher, decoder, server, tokens(3 * CHUNK, 62), kv, "first").pushedChunks());
            long connections = server.stats().connections();
            Thread.sleep(1_600); // idle between requests for more than three frame timeouts
            assertEquals(3, push(pusher, decoder, server, tokens(3 * CHUNK, 63), kv, "second").pushedChunks());
            assertEquals(connections, server.stats().connections(), "the receiver closed the idle kept connections at the "
                    + "frame timeout: the sender had to connect again");
        }
    }

    @Test
    void anAllocationAnswerOutOfProtocolStopsTheRequestCountsEveryChunkAndFreesTheStaging() throws Exception {
        byte[] token = TOKEN.getBytes(StandardCharsets.UTF_8);
        try (Arena arena = Arena.ofShared(); ServerSocketChannel fake = ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             LMCacheEngine keys = decoder(1 << 20); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN))) {
            int port = ((InetSocketAddress) fake.getLocalAddress()).getPort();
            Thread receiver = Thread.ofVirtual().start(() -> { // proves the token, then answers a request with an acknowledgement
                try {
                    while (true) {
                        PdConnection c = PdConnection.accept(fake.accept().socket(), token, Duration.ofSeconds(5), 1 << 20)
                                .orElseThrow();
                        Thread.ofVirtual().start(() -> {
                            try (c) {
                                if (c.receive() instanceof PdConnection.Message) {
                                    c.sendAck(PdConnection.OK);
                                }
                                c.receive(); // until the sender hangs up
                            } catch (IOException e) {
                                // the sender closed
                            }
                        });
                    }
                } catch (IOException e) {
                    // the test closed the listener
                }
            });
            PreparedRequest r = keys.prepare(tokens(4 * CHUNK, 61), Map.of());
            PdPusher.Transfer t = pusher.begin("fake", r.chunks(), new PdPusher.Peer("127.0.0.1", port, port));
            t.pushComputed(new PlanarKv(arena, MODEL, 4 * CHUNK, 62), 4 * CHUNK);
            long t0 = System.nanoTime();
            PdPusher.Result result = assertTimeoutPreemptively(BOUND, t::finish);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(0, result.pushedChunks());
            assertEquals(4, result.failedChunks());
            assertTrue(result.stopReason().orElse("").contains("out of protocol"), result.stopReason().toString());
            assertTrue(ms < PdReceiveServerTest.TIMEOUT.toMillis(), "the failed chunks were finished at once, not at the "
                    + "bound: " + ms + " ms");
            assertEquals(0, pusher.staging().stats().usedBytes(), "the staged chunks are freed");
            assertEquals(4, pusher.stats().failedChunks());
            fake.close();
            receiver.join();
        }
    }

    @Test
    void aWriteIntoRoomThatExpiredMeanwhileIsRefusedAndStopsItsRequest() throws Exception {
        int[] tokens = tokens(CHUNK, 111);
        try (Arena arena = Arena.ofShared();
             LMCacheEngine decoder = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                     .set("max_local_cpu_size", 0.02).set("hash_seed", "0").set("enable_pd", true)
                     .set("pd_role", "receiver").set("pd_buffer_size", (double) (1 << 20)).set("pd_buffer_device", "cpu")
                     .set("pd_peer_host", "127.0.0.1").set("pd_peer_init_port", List.of(0))
                     .set("pd_peer_alloc_port", List.of(0)).set("extra_config", Map.of("p2p_token", TOKEN, "pd_timeout_ms",
                             300)).build(), MODEL, KvConnector.host(1), List.of());
             PdReceiveServer server = PdReceiveServer.start(decoder);
             // the allocation answer is held back until the room it gives has expired on the decoder
             PdReceiveServerTest.AckHoldingRelay lateAnswer = new PdReceiveServerTest.AckHoldingRelay(server.allocPort(),
                     Long.MAX_VALUE, PdReceiveServerTest.AckHoldingRelay.HANDSHAKE_ANSWER_BYTES,
                     new CountDownLatch(1));
             PdPusher pusher = pusher(MODEL, Optional.of(TOKEN))) {
            PdPusher.Transfer t = pusher.begin("late", decoder.prepare(tokens, Map.of()).chunks(),
                    new PdPusher.Peer("127.0.0.1", server.initPort(), lateAnswer.port()));
            t.pushComputed(new PlanarKv(arena, MODEL, CHUNK, 112), CHUNK);
            long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
            while (tier(decoder).stats().expiredPending() == 0 && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertEquals(1, tier(decoder).stats().expiredPending(), "the room expired before the sender heard of it");
            lateAnswer.release();
            PdPusher.Result r = assertTimeoutPreemptively(BOUND, t::finish);
            assertEquals(0, r.pushedChunks(), r.toString());
            assertEquals(1, r.failedChunks(), r.toString());
            assertEquals(Optional.of("the receiver refused a write (its room had expired)"), r.stopReason());
            assertEquals(1, tier(decoder).stats().lateWrites());
            assertEquals(0, tier(decoder).stats().heldChunks());
            assertEquals(0, pusher.staging().stats().usedBytes());
            assertEquals(0, decoder.lookup(decoder.prepare(tokens, Map.of()), "late"), "nothing of it is served");
            decoder.lookupUnpin("late");
        }
    }

    @Test
    void aRequestsChunksMustBeWholeButTheLastAndAReceiverTwoPortsInRange() throws Exception {
        try (LMCacheEngine keys = decoder(1 << 20); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN))) {
            List<ChunkRange> chunks = keys.prepare(tokens(2 * CHUNK + 10, 71), Map.of()).chunks();
            assertEquals(3, chunks.size());
            PdPusher.Peer peer = new PdPusher.Peer("127.0.0.1", 1, 65535);
            pusher.begin("whole", chunks, peer); // every chunk whole but the last: fine
            pusher.begin("prefix", chunks.subList(0, 2), peer);
            assertThrows(IllegalArgumentException.class, () -> pusher.begin("partial-first",
                    List.of(chunks.get(2), chunks.get(0)), peer));
            ChunkRange c0 = chunks.get(0);
            assertThrows(IllegalArgumentException.class, () -> pusher.begin("empty", List.of(
                    new ChunkRange(c0.start(), c0.start(), c0.key())), peer));
            assertThrows(IllegalArgumentException.class, () -> pusher.begin("too-long", List.of(
                    new ChunkRange(c0.start(), c0.start() + CHUNK + 1, c0.key())), peer));
            pusher.begin("exactly", List.of(new ChunkRange(c0.start(), c0.start() + CHUNK, c0.key())), peer);
            pusher.begin("one-token", List.of(new ChunkRange(c0.start(), c0.start() + 1, c0.key())), peer);
        }
        for (int[] ports : new int[][] {{0, 1}, {1, 0}, {65536, 1}, {1, 65536}}) {
            assertThrows(IllegalArgumentException.class, () -> new PdPusher.Peer("127.0.0.1", ports[0], ports[1]));
        }
        assertThrows(IllegalArgumentException.class, () -> new PdPusher.Peer(" ", 1, 1));
        assertEquals(65535, new PdPusher.Peer("127.0.0.1", 65535, 1).initPort(), "the last port is a port");
    }

    @Test
    void finishReturnsAsSoonAsTheLastChunkIsAcknowledgedNotAtItsBound() throws Exception {
        Duration longTimeout = Duration.ofSeconds(30); // finish's bound is this times the chunks in flight
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             PdPusher pusher = new PdPusher(TensorMemoryAllocator.strict("staging", 64 * PdReceiveServerTest.CHUNK_BYTES,
                     4096), MODEL, CHUNK, Optional.of(TOKEN.getBytes(StandardCharsets.UTF_8)), longTimeout,
                     Optional.empty(), 0)) {
            PlanarKv kv = new PlanarKv(arena, MODEL, 4 * CHUNK, 81);
            for (int round = 0; round < 3; round++) {
                int[] prompt = tokens(4 * CHUNK, 82 + round);
                String id = "prompt-" + round;
                PdPusher.Result r = assertTimeoutPreemptively(Duration.ofSeconds(5), () -> push(pusher, decoder, server,
                        prompt, kv, id), "finish waited for its bound instead of the last acknowledgement");
                assertEquals(4, r.pushedChunks());
            }
        }
    }

    @Test
    void aClosedSenderRefusesNewRequestsAndHasLetGoOfItsStaging() throws Exception {
        TensorMemoryAllocator staging = TensorMemoryAllocator.strict("staging", 8 * PdReceiveServerTest.CHUNK_BYTES, 4096);
        PdPusher pusher = new PdPusher(staging, MODEL, CHUNK, Optional.of(TOKEN.getBytes(StandardCharsets.UTF_8)),
                PdReceiveServerTest.TIMEOUT, Optional.empty(), 0);
        try (LMCacheEngine keys = decoder(1 << 20)) {
            List<ChunkRange> chunks = keys.prepare(tokens(CHUNK, 91), Map.of()).chunks();
            pusher.close();
            pusher.close(); // twice is fine
            assertThrows(IllegalStateException.class, () -> pusher.begin("late", chunks,
                    new PdPusher.Peer("127.0.0.1", 1, 1)));
            assertThrows(IllegalStateException.class, () -> staging.allocate(
                    lmcache4j.allocator.TensorShape.of(2, 1, CHUNK, 32), DType.FLOAT32,
                    lmcache4j.allocator.MemoryFormat.KV_2LTD));
        }
    }
}
