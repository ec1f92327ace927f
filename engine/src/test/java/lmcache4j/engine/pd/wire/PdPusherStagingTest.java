package lmcache4j.engine.pd.wire;

import static lmcache4j.engine.pd.wire.PdReceiveServerTest.CHUNK;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.CHUNK_BYTES;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.MODEL;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.TOKEN;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.decoder;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.tokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.pd.PlanarKv;

/**
 * The sender's own bounds: a staging buffer smaller than a request waits for room as chunks are
 * acknowledged and pushes all of it; one whose room a chunk never acknowledged holds waits the timeout, no longer, and
 * stops the request with every chunk counted; closing the sender ends such a wait at once; and a
 * receiver whose allocation answer names a chunk the batch does not have (out of range, or twice)
 * is a protocol error before any byte is written, not an exception that kills the batch half-way.
 */
class PdPusherStagingTest {
    private static final Duration BOUND = Duration.ofSeconds(20);
    private static final byte[] KEY = TOKEN.getBytes(StandardCharsets.UTF_8);

    private static PdPusher pusher(long stagingBytes, Duration timeout) {
        return pusher(TensorMemoryAllocator.strict("staging", stagingBytes, 4096), timeout);
    }

    private static PdPusher pusher(TensorMemoryAllocator staging, Duration timeout) {
        return new PdPusher(staging, MODEL, CHUNK, Optional.of(KEY), timeout, Optional.empty(), 0);
    }

    @Test
    void aStagingBufferOfTwoChunksPushesARequestOfEightByWaitingForRoom() throws Exception {
        int chunks = 8;
        int[] tokens = tokens(chunks * CHUNK, 101);
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             PdPusher pusher = pusher(2 * CHUNK_BYTES, PdReceiveServerTest.TIMEOUT)) {
            PlanarKv kv = new PlanarKv(arena, MODEL, chunks * CHUNK, 102);
            PdPusher.Transfer t = pusher.begin("small-staging", decoder.prepare(tokens, Map.of()).chunks(),
                    new PdPusher.Peer("127.0.0.1", server.initPort(), server.allocPort()));
            long t0 = System.nanoTime();
            t.pushComputed(kv, tokens.length); // gathers two, then waits for each room an acknowledgement frees
            long beforeFinish = System.nanoTime();
            PdPusher.Result r = assertTimeoutPreemptively(BOUND, t::finish);
            long finishing = System.nanoTime() - beforeFinish;
            assertTrue(r.stagingWaitNanos() <= beforeFinish - t0, "waits within the call: " + r);
            assertTrue(r.drainNanos() >= 0 && r.drainNanos() <= finishing, "the drain is finish's own wait: " + r);
            assertEquals(chunks, r.pushedChunks(), r.toString());
            assertEquals(Optional.empty(), r.stopReason());
            assertTrue(r.stagingWaitNanos() > 0, "the caller waited for staging room: " + r);
            assertEquals(0, pusher.stats().stagingTimeouts());
            assertEquals(0, pusher.staging().stats().usedBytes(), "every room given back");
            PreparedRequest again = decoder.prepare(tokens, Map.of());
            assertEquals(tokens.length, decoder.lookup(again, "s"));
            PlanarKv out = new PlanarKv(arena, MODEL, chunks * CHUNK, 0);
            decoder.retrieve(again, out, "s");
            assertArrayEquals(kv.bytes(tokens.length), out.bytes(tokens.length));
        }
    }

    @Test
    void noStagingRoomWithinTheTimeoutStopsTheRequestAfterTheTimeoutNotBeforeAndCountsIt() throws Exception {
        Duration timeout = Duration.ofMillis(600);
        int[] tokens = tokens(3 * CHUNK, 103);
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             PdReceiveServerTest.AckHoldingRelay noAcks = new PdReceiveServerTest.AckHoldingRelay(server.initPort());
             PdPusher pusher = pusher(CHUNK_BYTES, timeout)) { // room for one chunk, held until its acknowledgement
            PdPusher.Transfer t = pusher.begin("no-room", decoder.prepare(tokens, Map.of()).chunks(),
                    new PdPusher.Peer("127.0.0.1", noAcks.port(), server.allocPort()));
            long t0 = System.nanoTime();
            assertTimeoutPreemptively(BOUND, () -> t.pushComputed(new PlanarKv(arena, MODEL, 3 * CHUNK, 104), tokens.length));
            long waitedMs = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(waitedMs >= timeout.toMillis() && waitedMs < timeout.toMillis() + 1_500,
                    "waited " + waitedMs + " ms for staging room, the timeout is " + timeout.toMillis());
            long elapsed = System.nanoTime() - t0;
            PdPusher.Result r = assertTimeoutPreemptively(BOUND, t::finish);
            assertEquals(0, r.pushedChunks());
            assertEquals(3, r.failedChunks(), r.toString());
            assertTrue(r.stopReason().orElse("").contains("no staging room for 600 ms"), r.stopReason().toString());
            assertTrue(r.stagingWaitNanos() >= timeout.toNanos() && r.stagingWaitNanos() <= elapsed,
                    "the wait counted: " + r.stagingWaitNanos() + " ns of " + elapsed);
            assertEquals(1, pusher.stats().stagingTimeouts());
            assertEquals(3, pusher.stats().failedChunks());
            assertEquals(0, pusher.staging().stats().usedBytes(), "the unacknowledged chunk's room is given back too");
        }
    }

    @Test
    void closingTheSenderEndsAWaitForStagingRoomAtOnce() throws Exception {
        int[] tokens = tokens(2 * CHUNK, 105);
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             PdReceiveServerTest.AckHoldingRelay noAcks = new PdReceiveServerTest.AckHoldingRelay(server.initPort())) {
            PdPusher pusher = pusher(CHUNK_BYTES, Duration.ofSeconds(30));
            PdPusher.Transfer t = pusher.begin("closed-while-waiting", decoder.prepare(tokens, Map.of()).chunks(),
                    new PdPusher.Peer("127.0.0.1", noAcks.port(), server.allocPort()));
            PlanarKv kv = new PlanarKv(arena, MODEL, 2 * CHUNK, 106);
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread caller = Thread.ofPlatform().start(() -> {
                try {
                    t.pushComputed(kv, tokens.length);
                } catch (Throwable e) {
                    thrown.set(e);
                }
            });
            Thread.sleep(300);
            assertTrue(caller.isAlive(), "the caller waits for the room its first chunk holds");
            long t0 = System.nanoTime();
            pusher.close();
            caller.join(Duration.ofSeconds(5));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(!caller.isAlive() && ms < 5_000, "the wait ended with the sender, not at its 30 s timeout: " + ms
                    + " ms");
            assertEquals(null, thrown.get(), "the caller returns: nothing of the closed sender is used");
            // the first reason stands: the sender closed, or its first chunk's connection, closed with it
            String why = t.stopReason().orElse("");
            assertTrue(why.equals("the sender closed") || why.startsWith("push to "), why);
            assertEquals(0, pusher.stats().stagingTimeouts(), "not a timeout");
        }
    }

    @Test
    void anAllocationAnswerNamingAChunkTheBatchDoesNotHaveIsRefusedBeforeAnyWrite() throws Exception {
        // the already-sent indexes of the answer to a batch of n > 1 (a slot for each other chunk): beyond, twice, negative
        List<IntFunction<List<Integer>>> hostile = List.of(n -> List.of(n), n -> List.of(0, 0), n -> List.of(-1));
        for (IntFunction<List<Integer>> already : hostile) {
            try (Arena arena = Arena.ofShared(); LMCacheEngine keys = decoder(1 << 20);
                 FakeReceiver fake = new FakeReceiver(n -> n == 1 ? List.of() : already.apply(n));
                 PdPusher pusher = pusher(8 * CHUNK_BYTES, PdReceiveServerTest.TIMEOUT)) {
                PdPusher.Peer peer = new PdPusher.Peer("127.0.0.1", fake.port(), fake.port());
                PlanarKv kv = new PlanarKv(arena, MODEL, 4 * CHUNK, 109);
                // a's one chunk keeps the sending thread waiting for its answer, so b's four are queued by then: one batch
                PdPusher.Transfer a = pusher.begin("a", keys.prepare(tokens(CHUNK, 107), Map.of()).chunks(), peer);
                a.pushComputed(kv, CHUNK);
                PdPusher.Transfer b = pusher.begin("b", keys.prepare(tokens(4 * CHUNK, 108), Map.of()).chunks(), peer);
                b.pushComputed(kv, 4 * CHUNK);
                PdPusher.Result first = assertTimeoutPreemptively(BOUND, a::finish);
                assertEquals(1, first.pushedChunks(), first.toString());
                PdPusher.Result r = assertTimeoutPreemptively(BOUND, b::finish);
                String why = r.stopReason().orElse("");
                assertEquals(0, r.pushedChunks(), r.toString());
                assertEquals(4, r.failedChunks(), r.toString());
                assertTrue(why.contains("out of protocol") && why.contains("already sent"), why);
                assertEquals(1, fake.writes.get(), "not one of b's chunks was written into room the answer left unclear");
                assertEquals(0, pusher.staging().stats().usedBytes());
                PdPusher.Transfer c = pusher.begin("c", keys.prepare(tokens(CHUNK, 110), Map.of()).chunks(), peer);
                c.pushComputed(kv, CHUNK);
                assertEquals(1, assertTimeoutPreemptively(BOUND, c::finish).pushedChunks(), "the sender goes on");
                assertEquals(4, fake.connections.get(), "a receiver out of protocol is not reused: fresh connections");
            }
        }
    }

    /**
     * A receiver that proves the token and answers every allocation request with {@code already}
     * (given the number of keys asked for) and a slot for each other key, after a delay; it
     * acknowledges writes.
     */
    private static final class FakeReceiver implements AutoCloseable {
        final AtomicInteger writes = new AtomicInteger();
        final AtomicInteger connections = new AtomicInteger();
        private final ServerSocketChannel listener;
        private final List<PdConnection> open = new ArrayList<>();

        FakeReceiver(IntFunction<List<Integer>> already) throws IOException {
            listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        PdConnection c = PdConnection.accept(listener.accept().socket(), KEY, Duration.ofSeconds(5), 1 << 20)
                                .orElseThrow();
                        connections.incrementAndGet();
                        synchronized (open) {
                            open.add(c);
                        }
                        Thread.ofVirtual().start(() -> serve(c, already));
                    }
                } catch (IOException e) {
                    // closed
                }
            });
        }

        private void serve(PdConnection c, IntFunction<List<Integer>> already) {
            try (c) {
                while (true) {
                    PdConnection.Frame f = c.receive();
                    if (f instanceof PdConnection.Message m) {
                        int n = PdMessages.decodeAllocRequest(m.body()).keys().size();
                        // a's answer late, so b's chunks are queued by then; b's late too, so a's acknowledgement is read
                        // first (a receiver out of protocol loses its connections, and what awaits acknowledgement on them)
                        Thread.sleep(n == 1 ? 300 : 200);
                        List<Integer> sent = already.apply(n);
                        List<Long> slots = new ArrayList<>();
                        for (int i = 0; i < n - sent.size(); i++) {
                            slots.add(1_000L + i);
                        }
                        c.sendMessage(PdMessages.encode(new AllocResponse(sent, slots, "")));
                    } else if (f instanceof PdConnection.ChunkHeader) {
                        writes.incrementAndGet();
                        c.skipChunkPayload();
                        c.sendAck(PdConnection.OK);
                    }
                }
            } catch (IOException e) {
                // the sender hung up
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        int port() throws IOException {
            return ((InetSocketAddress) listener.getLocalAddress()).getPort();
        }

        @Override
        public void close() throws IOException {
            listener.close();
            synchronized (open) {
                open.forEach(PdConnection::close);
            }
        }
    }
}
