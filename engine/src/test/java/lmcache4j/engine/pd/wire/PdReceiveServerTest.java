package lmcache4j.engine.pd.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.pd.PdBackend;
import lmcache4j.engine.pd.PlanarKv;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;

/**
 * A sender's pushes into a decoder's PD tier through its real ports: every chunk lands byte for byte
 * and is retrieved once; and each fault of the issue is refused or a miss, counted, bounded in time,
 * with nothing wrong served and no memory left held: a sender without the token, a chunk altered in
 * flight (alone, and in the middle of a window of chunks in flight), a full buffer, another model's
 * chunks, a decoder that never answers, a sender that dies with acknowledgements outstanding, a
 * chunk whose bytes stop coming mid-payload.
 */
class PdReceiveServerTest {
    static final String TOKEN = "pd-test-token-0123456789abcdef";
    static final int CHUNK = 64;
    static final ModelMetadata MODEL = new ModelMetadata("pd/test", 1, 0, DType.FLOAT32, 2, 2, 16, false);
    static final long CHUNK_BYTES = MODEL.chunkBytes(CHUNK); // 32 KiB
    static final Duration TIMEOUT = Duration.ofMillis(1_500);

    static LMCacheEngine decoder(long bufferBytes) {
        return LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 0.02).set("hash_seed", "0").set("enable_pd", true).set("pd_role", "receiver")
                .set("pd_buffer_size", (double) bufferBytes).set("pd_buffer_device", "cpu").set("pd_peer_host", "127.0.0.1")
                .set("pd_peer_init_port", List.of(0)).set("pd_peer_alloc_port", List.of(0))
                .set("extra_config", Map.of("p2p_token", TOKEN, "pd_timeout_ms", (int) TIMEOUT.toMillis())).build(),
                MODEL, KvConnector.host(1), List.of());
    }

    static PdPusher pusher(ModelMetadata model, Optional<String> token) {
        return new PdPusher(TensorMemoryAllocator.strict("staging", 64 * CHUNK_BYTES, 4096), model, CHUNK,
                token.map(t -> t.getBytes(StandardCharsets.UTF_8)), TIMEOUT, Optional.empty(), 0);
    }

    static PdBackend tier(LMCacheEngine e) {
        return e.storage().tier(PdBackend.NAME).map(PdBackend.class::cast).orElseThrow();
    }

    static int[] tokens(int n, long seed) {
        return new Random(seed).ints(n, 0, 30_000).toArray();
    }

    /** Pushes {@code tokens}' KV from {@code kv} to {@code server} as one request, then finishes it. */
    static PdPusher.Result push(PdPusher pusher, LMCacheEngine decoder, PdReceiveServer server, int[] tokens, PlanarKv kv,
                                String reqId) {
        PreparedRequest r = decoder.prepare(tokens, Map.of());
        PdPusher.Transfer t = pusher.begin(reqId, r.chunks(), new PdPusher.Peer("127.0.0.1", server.initPort(),
                server.allocPort()));
        for (int at = CHUNK; at < tokens.length + CHUNK; at += CHUNK) {
            t.pushComputed(kv, Math.min(at, tokens.length));
        }
        return t.finish();
    }

    @Test
    void everyPushedChunkIsRetrievedByteForByteAndItsRoomFreed() throws IOException {
        int[] tokens = tokens(300, 1); // four full chunks and one of 44 tokens
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN))) {
            PlanarKv kv = new PlanarKv(arena, MODEL, 512, 7);
            PdPusher.Result r = push(pusher, decoder, server, tokens, kv, "req-1");
            assertEquals(5, r.pushedChunks(), "stopped: " + r.stopReason());
            assertEquals(4 * CHUNK_BYTES + CHUNK_BYTES * 44 / CHUNK, r.pushedBytes());
            PreparedRequest request = decoder.prepare(tokens, Map.of());
            assertEquals(300, decoder.lookup(request, "l1"), "the whole prompt, its partial last chunk included");
            PlanarKv out = new PlanarKv(arena, MODEL, 512, 0);
            boolean[] loaded = decoder.retrieve(request, out, "l1");
            for (boolean b : loaded) {
                assertTrue(b);
            }
            assertArrayEquals(kv.bytes(300), out.bytes(300), "the decoder's KV is the sender's, byte for byte");
            PdBackend.Stats s = tier(decoder).stats();
            assertEquals(5, s.landedChunks());
            assertEquals(5, s.servedChunks());
            assertEquals(0, s.heldChunks(), "each chunk's one claim consumed");
            assertEquals(0, s.usedBytes());
            assertEquals(0, pusher.staging().stats().usedBytes(), "the sender's staging is free again");
        }
    }

    /**
     * The same prompt pushed twice before the decoder reads it (a retried request, or two requests sharing a
     * prefix): the second push writes nothing, the decoder holds one copy with two claims, and each request's
     * retrieve is served (a claim no retrieve reaches is freed at {@code pd_unclaimed_ttl_ms}, PdBackendTest).
     */
    @Test
    void aPromptPushedAgainBeforeItIsReadIsNotWrittenTwiceAndServesBothRequests() throws IOException {
        int[] tokens = tokens(2 * CHUNK + 10, 31);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN))) {
            PlanarKv kv = new PlanarKv(arena, MODEL, 3 * CHUNK, 32);
            PdPusher.Result first = push(pusher, decoder, server, tokens, kv, "req-first");
            assertEquals(3, first.pushedChunks(), first.toString());
            PdPusher.Result again = push(pusher, decoder, server, tokens, kv, "req-again");
            assertEquals(0, again.pushedChunks(), again.toString());
            assertEquals(3, again.alreadySentChunks(), again.toString());
            assertEquals(0, again.pushedBytes());
            assertEquals(Optional.empty(), again.stopReason());
            assertEquals(3, pusher.stats().alreadySentChunks());
            assertEquals(3, server.stats().writes(), "each chunk written once");
            PdBackend.Stats s = tier(decoder).stats();
            assertEquals(3, s.heldChunks());
            assertEquals(3, s.alreadySentChunks());
            for (String lookup : List.of("l-first", "l-again")) { // one claim each
                PreparedRequest request = decoder.prepare(tokens, Map.of());
                assertEquals(tokens.length, decoder.lookup(request, lookup), lookup);
                PlanarKv out = new PlanarKv(arena, MODEL, 3 * CHUNK, 0);
                for (boolean b : decoder.retrieve(request, out, lookup)) {
                    assertTrue(b, lookup);
                }
                assertArrayEquals(kv.bytes(tokens.length), out.bytes(tokens.length), lookup);
            }
            // the first retrieve read the PD tier (its copy then sits in the CPU tier, which a later lookup reaches first)
            assertEquals(3, tier(decoder).stats().servedChunks());
            assertEquals(0, pusher.staging().stats().usedBytes());
        }
    }

    @Test
    void aSenderWithoutTheTokenIsRefusedAndNothingLands() throws IOException {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             PdPusher stranger = pusher(MODEL, Optional.of("a-token-of-its-own-0123456789"))) {
            PdPusher.Result r = push(stranger, decoder, server, tokens(200, 2), new PlanarKv(arena, MODEL, 256, 3), "req-2");
            assertEquals(0, r.pushedChunks());
            // The sender checks the decoder's proof first: with another token it sends nothing keyed.
            assertTrue(r.stopReason().orElseThrow().contains("could not prove it holds the token"), r.stopReason().get());
            assertEquals(0, tier(decoder).stats().allocatedChunks());
        }
    }

    /** A client that ignores the decoder's proof, presents a wrong one, and sends an allocation request anyway. */
    @Test
    void aFloodOfSilentConnectionsIsCappedHoldsBoundedThreadsAndASenderIsServedAfterIt() throws Exception {
        int flood = 2 * PdReceiveServer.MAX_CONNECTIONS + 20; // past the cap of both ports together
        List<SocketChannel> silent = new java.util.ArrayList<>();
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN))) {
            try {
                for (int i = 0; i < flood; i++) { // connect and say nothing: each holds a thread until its handshake times out
                    silent.add(SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                            i % 2 == 0 ? server.allocPort() : server.initPort())));
                }
                waitFor(() -> server.stats().connections() + server.stats().refusedConnections() == flood,
                        "every connection accepted or refused");
                assertTrue(server.stats().refusedConnections() >= flood - 2L * PdReceiveServer.MAX_CONNECTIONS,
                        server.stats().toString());
                long handlers = Thread.getAllStackTraces().keySet().stream()
                        .filter(t -> t.getName().contains("pd-receive-conn")).count();
                assertTrue(handlers <= 2L * PdReceiveServer.MAX_CONNECTIONS, handlers + " connection threads");
            } finally {
                for (SocketChannel c : silent) {
                    c.close();
                }
            }
            // Once the silent ones are gone (closed, or their handshake timed out), a sender is served again.
            long deadline = System.nanoTime() + 4 * TIMEOUT.toNanos();
            PdPusher.Result r;
            int attempt = 0;
            do { // fresh tokens each time: a retry's chunks are not the ones an earlier attempt may have landed
                int[] tokens = tokens(2 * CHUNK, 21 + attempt++);
                r = push(pusher, decoder, server, tokens, new PlanarKv(arena, MODEL, tokens.length, 22), "req-after-flood-" + attempt);
            } while (r.pushedChunks() < 2 && System.nanoTime() < deadline);
            assertEquals(2, r.pushedChunks(), r.toString());
        }
    }

    @Test
    void aWrongProofIsAnsweredFailCountedAndTheConnectionClosed() throws IOException {
        try (LMCacheEngine decoder = decoder(1 << 20); PdReceiveServer server = PdReceiveServer.start(decoder);
             SocketChannel c = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.allocPort()))) {
            LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO, 32,
                    LmProtocol.PLACEHOLDER_KEY)), ByteBuffer.wrap(new byte[32]));
            LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES + 64);
            LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF, 32,
                    LmProtocol.PLACEHOLDER_KEY)), ByteBuffer.wrap(new byte[32]));
            assertEquals(LmProtocol.FAIL, LmProtocol.replyCode(LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES)));
            long failed = System.nanoTime();
            byte[] request = lmcache4j.engine.pd.wire.PdMessages.encode(new lmcache4j.engine.pd.wire.AllocRequest(
                    List.of(decoder.prepare(tokens(64, 11), Map.of()).chunks().getFirst().key().toKeyString()), 1,
                    List.of(2, 2, CHUNK, 32), "float", CHUNK));
            ByteBuffer frame = ByteBuffer.allocate(5 + request.length + 16).putInt(request.length).put((byte) 1).put(request);
            try {
                LmProtocol.writeFully(c, frame.flip());
                assertEquals(-1, c.read(ByteBuffer.allocate(1)), "closed without an answer");
            } catch (IOException e) {
                // reset: closed as well
            }
            long ms = (System.nanoTime() - failed) / 1_000_000;
            assertTrue(ms >= PdReceiveServer.AUTH_FAILURE_DELAY_MS - 20, "hung up " + ms + " ms after FAIL: the delay that "
                    + "slows guessing was skipped");
            assertEquals(1, server.stats().authFailures());
            assertEquals(0, tier(decoder).stats().allocatedChunks(), "nothing allocated for it");
        }
    }

    @Test
    void aChunkAlteredInFlightIsNeverServed() throws Exception {
        int[] tokens = tokens(256, 4);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN));
             FlippingRelay relay = new FlippingRelay(server.initPort(), 20_000)) {
            PreparedRequest r = decoder.prepare(tokens, Map.of());
            PdPusher.Transfer t = pusher.begin("req-3", r.chunks(), new PdPusher.Peer("127.0.0.1", relay.port(),
                    server.allocPort()));
            t.pushComputed(new PlanarKv(arena, MODEL, 256, 5), 256);
            PdPusher.Result result = t.finish();
            assertTrue(relay.flipped(), "the relay changed a payload byte");
            assertEquals(0, result.pushedChunks(), "the receiver refused the altered chunk");
            assertEquals(1, server.stats().tagFailures());
            assertEquals(1, tier(decoder).stats().tagFailures());
            assertEquals(0, decoder.lookup(decoder.prepare(tokens, Map.of()), "l3"), "nothing of it is seen");
            decoder.lookupUnpin("l3");
        }
    }

    @Test
    void aFullBufferRefusesTheRestAndTheDecoderRetrievesThePrefix() throws IOException {
        int[] tokens = tokens(40 * CHUNK, 6); // 40 chunks into a buffer of 32
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN))) {
            long t0 = System.nanoTime();
            PdPusher.Result r = push(pusher, decoder, server, tokens, new PlanarKv(arena, MODEL, tokens.length, 7), "req-4");
            assertTrue(System.nanoTime() - t0 < TIMEOUT.toNanos(), "refused at once, not waited for");
            assertEquals(32, r.pushedChunks());
            assertTrue(r.refusedChunks() + r.failedChunks() == 8, r.toString());
            assertTrue(r.stopReason().orElseThrow().contains("full"));
            assertEquals(32 * CHUNK, decoder.lookup(decoder.prepare(tokens, Map.of()), "l4"));
            decoder.lookupUnpin("l4");
            assertTrue(tier(decoder).stats().refusedChunks() >= 1);
        }
    }

    @Test
    void anotherModelsChunksAreRefusedWhole() throws IOException {
        ModelMetadata other = new ModelMetadata("pd/test", 1, 0, DType.FLOAT32, 3, 2, 16, false);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(other, Optional.of(TOKEN))) {
            PreparedRequest r = decoder.prepare(tokens(128, 8), Map.of());
            PdPusher.Transfer t = pusher.begin("req-5", r.chunks(), new PdPusher.Peer("127.0.0.1", server.initPort(),
                    server.allocPort()));
            t.pushComputed(new ThreeLayerKv(arena), 128);
            PdPusher.Result result = t.finish();
            assertEquals(0, result.pushedChunks());
            assertTrue(result.stopReason().orElseThrow().contains("chunk shape [2, 3, 64, 32]"), result.stopReason().get());
            assertEquals(1, tier(decoder).stats().refusedRequests());
            assertEquals(0, tier(decoder).stats().heldChunks());
        }
    }

    @Test
    void aDecoderThatNeverAnswersIsGivenUpOnInTimeAndTheStagingFreed() throws Exception {
        try (Arena arena = Arena.ofConfined(); ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             PdPusher pusher = pusher(MODEL, Optional.of(TOKEN))) {
            List<Socket> accepted = new CopyOnWriteArrayList<>();
            Thread acceptor = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        accepted.add(silent.accept()); // accepts, never reads nor answers
                    }
                } catch (IOException e) {
                    // closed
                }
            });
            try (LMCacheEngine keys = decoder(1 << 20)) {
                PreparedRequest r = keys.prepare(tokens(512, 9), Map.of());
                long t0 = System.nanoTime();
                PdPusher.Transfer t = pusher.begin("req-6", r.chunks(), new PdPusher.Peer("127.0.0.1", silent.getLocalPort(),
                        silent.getLocalPort()));
                t.pushComputed(new PlanarKv(arena, MODEL, 512, 10), 512);
                PdPusher.Result result = t.finish();
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertEquals(0, result.pushedChunks());
                assertEquals(8, result.failedChunks());
                assertTrue(ms < 3 * TIMEOUT.toMillis() + 2_000, "gave up after " + ms + " ms");
                assertEquals(0, pusher.staging().stats().usedBytes(), "the staged chunks are freed");
            } finally {
                silent.close();
                acceptor.join();
                for (Socket s : accepted) {
                    s.close();
                }
            }
        }
    }

    @Test
    void chunksNeverGatheredBecauseThePushStoppedCountAsFailedInTheResultAndTheTotalsAlike() throws Exception {
        int unreachable;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            unreachable = probe.getLocalPort(); // closed below: connections are refused at once
        }
        try (Arena arena = Arena.ofConfined(); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN));
             LMCacheEngine keys = decoder(1 << 20)) {
            PreparedRequest r = keys.prepare(tokens(512, 11), Map.of()); // 8 chunks
            PdPusher.Transfer t = pusher.begin("req-stopped", r.chunks(), new PdPusher.Peer("127.0.0.1", unreachable,
                    unreachable));
            t.pushComputed(new PlanarKv(arena, MODEL, 512, 12), 2 * CHUNK); // the prefill got this far when the push failed
            PdPusher.Result result = t.finish();
            assertEquals(0, result.pushedChunks());
            assertEquals(8, result.failedChunks(), "2 gathered and failed, 6 never gathered");
            assertEquals(8, pusher.stats().failedChunks(), "the totals count what the results count");
            assertEquals(result.failedChunks(), t.finish().failedChunks(), "a second finish counts nothing twice");
            assertEquals(8, pusher.stats().failedChunks());
        }
    }

    @Test
    void aChunkAlteredInTheMiddleOfAWindowLosesItAndWhatFollowsNothingElse() throws Exception {
        int chunks = 12;
        int[] tokens = tokens(chunks * CHUNK, 11);
        long frame = 5 + Long.BYTES + CHUNK_BYTES + 16; // header, slot, payload, tag
        int altered = 5;
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN));
             FlippingRelay relay = new FlippingRelay(server.initPort(), 20_000 + altered * frame)) {
            PlanarKv kv = new PlanarKv(arena, MODEL, chunks * CHUNK, 12);
            PreparedRequest r = decoder.prepare(tokens, Map.of());
            PdPusher.Transfer t = pusher.begin("req-w1", r.chunks(), new PdPusher.Peer("127.0.0.1", relay.port(),
                    server.allocPort()));
            long t0 = System.nanoTime();
            t.pushComputed(kv, tokens.length); // every chunk queued at once: a window of them in flight
            PdPusher.Result result = t.finish();
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(relay.flipped(), "the relay changed a byte of chunk " + altered);
            // The relay drops the connection when the receiver does, so acknowledgements it had not passed on yet
            // are lost: the sender may count a landed chunk as failed, never the other way round.
            assertTrue(result.pushedChunks() <= altered, result.toString());
            assertEquals(chunks, result.pushedChunks() + result.failedChunks(), "every chunk accounted for: " + result);
            assertTrue(result.stopReason().isPresent(), result.toString());
            assertTrue(ms < TIMEOUT.toMillis(), "the broken connection failed the window at once, not after a wait: " + ms
                    + " ms");
            assertEquals(0, pusher.staging().stats().usedBytes(), "no staged chunk is left waiting for an acknowledgement");
            assertEquals(1, server.stats().tagFailures());
            assertEquals(altered * CHUNK, decoder.lookup(decoder.prepare(tokens, Map.of()), "w1"),
                    "the prefix before the altered chunk is served, nothing from it on");
            decoder.lookupUnpin("w1");
            assertEquals(altered, tier(decoder).stats().landedChunks());

            // The pusher reconnects for its next request: the broken link is not reused.
            int[] next = tokens(chunks * CHUNK, 13);
            PdPusher.Result again = push(pusher, decoder, server, next, kv, "req-w2");
            assertEquals(chunks, again.pushedChunks(), again.toString());
        }
    }

    @Test
    void aSenderThatDiesWithAcknowledgementsOutstandingHeldAtMostItsWindowAndLeavesNothingHalfWritten()
            throws Exception {
        int chunks = 24;
        int[] tokens = tokens(chunks * CHUNK, 14);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(2 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             AckHoldingRelay relay = new AckHoldingRelay(server.initPort())) {
            PdPusher pusher = pusher(MODEL, Optional.of(TOKEN));
            PlanarKv kv = new PlanarKv(arena, MODEL, chunks * CHUNK, 15);
            PreparedRequest r = decoder.prepare(tokens, Map.of());
            PdPusher.Transfer t = pusher.begin("req-d1", r.chunks(), new PdPusher.Peer("127.0.0.1", relay.port(),
                    server.allocPort()));
            t.pushComputed(kv, tokens.length);
            int bound = PdPusher.WINDOW + 2; // the window, the one whose acknowledgement is being read, the one being written
            long deadline = System.nanoTime() + TIMEOUT.toNanos() / 2;
            while (tier(decoder).stats().landedChunks() < bound && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            Thread.sleep(100); // had the window no bound, more would land now
            long landed = tier(decoder).stats().landedChunks();
            assertEquals(bound, landed, "with no acknowledgement back, the sender wrote " + landed + " chunks: its "
                    + "window keeps exactly " + bound + " in flight, no more (bounded) and no fewer (pipelined)");

            long t0 = System.nanoTime();
            pusher.close(); // the sender goes away with its acknowledgements outstanding (throws if staging is left held)
            long closeMs = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(closeMs < TIMEOUT.toMillis() + 1_000, "close took " + closeMs + " ms");

            long until = System.nanoTime() + 4 * TIMEOUT.toNanos();
            PdBackend.Stats s = tier(decoder).stats();
            while (s.heldChunks() > landed && System.nanoTime() < until) {
                Thread.sleep(20);
                s = tier(decoder).stats();
            }
            assertEquals(landed, s.heldChunks(), "the room never written is freed after the timeout: " + s);
            assertEquals(s.allocatedChunks() - landed, s.expiredPending(), s.toString());
            assertEquals(0, s.tagFailures());
            assertEquals(landed * CHUNK, decoder.lookup(decoder.prepare(tokens, Map.of()), "d1"),
                    "what landed whole is served; nothing after it");
            PlanarKv out = new PlanarKv(arena, MODEL, chunks * CHUNK, 0);
            decoder.retrieve(decoder.prepare(tokens, Map.of()), out, "d1");
            assertArrayEquals(kv.bytes((int) landed * CHUNK), out.bytes((int) landed * CHUNK));
        }
    }

    @Test
    void theNextBatchsRoomIsAskedForBeforeTheCurrentBatchIsWritten() throws Exception {
        int batch = 16; // PdPusher's MAX_BATCH
        int[] first = tokens(CHUNK, 18);
        int[] second = tokens(3 * batch * CHUNK, 19);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(4 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN));
             AckHoldingRelay heldAnswers = new AckHoldingRelay(server.allocPort(), Long.MAX_VALUE,
                     AckHoldingRelay.HANDSHAKE_ANSWER_BYTES, new CountDownLatch(1));
             AckHoldingRelay heldAcks = new AckHoldingRelay(server.initPort())) {
            PlanarKv kv = new PlanarKv(arena, MODEL, second.length, 20);
            // Request a keeps the sending thread waiting for its room, so that all of b's chunks are queued when it
            // comes to b: b's batches are then whole, whatever the threads' timing.
            PdPusher.Transfer a = pusher.begin("req-a", decoder.prepare(first, Map.of()).chunks(),
                    new PdPusher.Peer("127.0.0.1", server.initPort(), heldAnswers.port()));
            a.pushComputed(kv, CHUNK);
            PdPusher.Transfer b = pusher.begin("req-b", decoder.prepare(second, Map.of()).chunks(),
                    new PdPusher.Peer("127.0.0.1", heldAcks.port(), server.allocPort()));
            b.pushComputed(kv, second.length);
            waitFor(() -> server.stats().allocationRequests() == 1, "a's allocation request arrived");
            heldAnswers.release();
            assertEquals(1, a.finish().pushedChunks());

            // b's first batch: its writes stop at the window (no acknowledgement comes back), and by then the room
            // of its second batch was asked for, since that request goes out before the first batch's writes.
            int stalled = 1 + PdPusher.WINDOW + 2;
            waitFor(() -> server.stats().writes() == stalled, "b's writes reached its window");
            waitFor(() -> server.stats().allocationRequests() == 3, "b's second batch's room asked for while its first"
                    + " batch was being written (allocation requests: " + server.stats().allocationRequests() + ")");
            Thread.sleep(100);
            assertEquals(stalled, server.stats().writes(), "still held at the window");
            assertEquals(3, server.stats().allocationRequests(), "one batch ahead, not more");
            assertEquals(1 + 2 * batch, tier(decoder).stats().allocatedChunks());
        }
    }

    private static void waitFor(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + TIMEOUT.toMillis() + " ms: " + what);
            }
            Thread.sleep(2);
        }
    }

    @Test
    void aChunkWhoseBytesStopComingMidPayloadIsGivenUpOnAndItsRoomFreed() throws Exception {
        int[] tokens = tokens(CHUNK, 16);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(MODEL, Optional.of(TOKEN));
             AckHoldingRelay relay = new AckHoldingRelay(server.initPort(), 20_000, Long.MAX_VALUE)) {
            PdPusher.Transfer t = pusher.begin("req-s1", decoder.prepare(tokens, Map.of()).chunks(),
                    new PdPusher.Peer("127.0.0.1", relay.port(), server.allocPort()));
            t.pushComputed(new PlanarKv(arena, MODEL, CHUNK, 17), CHUNK); // the relay passes 20,000 bytes, then holds the rest
            PdPusher.Result result = t.finish();
            assertEquals(0, result.pushedChunks(), result.toString());
            // The receiver reads the payload straight into the room, so its own deadline must end the read:
            // the sender's side of the relay stays open and silent.
            long until = System.nanoTime() + 4 * TIMEOUT.toNanos();
            PdBackend.Stats s = tier(decoder).stats();
            while ((s.heldChunks() > 0 || s.usedBytes() > 0) && System.nanoTime() < until) {
                Thread.sleep(20);
                s = tier(decoder).stats();
            }
            assertEquals(0, s.heldChunks(), "the half-written room is freed: " + s);
            assertEquals(0, s.landedChunks(), s.toString());
            assertEquals(0, decoder.lookup(decoder.prepare(tokens, Map.of()), "s1"), "nothing of it is seen");
            decoder.lookupUnpin("s1");
        }
    }

    /** A KV cache of a three-layer model of the same width (another model's shape). */
    private static final class ThreeLayerKv implements ExternalKvCache {
        private final Arena arena;

        ThreeLayerKv(Arena arena) {
            this.arena = arena;
        }

        @Override public DType dtype() { return DType.FLOAT32; }
        @Override public int layerCount() { return 3; }
        @Override public int numKvHeads() { return 2; }
        @Override public int headSize() { return 16; }
        @Override public int capacity() { return 1024; }

        @Override
        public void gather(int start, int end, MemorySegment chunk) {
            chunk.fill((byte) 1);
        }

        @Override
        public void scatter(MemorySegment chunk, int start, int end) {
        }
    }

    /**
     * A man in the middle of the transfer port: passes everything, except that it flips the byte at
     * {@code flipAt} of the sender's stream (past the handshake, inside the first chunk's payload).
     */
    static final class FlippingRelay implements AutoCloseable {
        private final ServerSocketChannel server;
        private final long flipAt;
        private volatile boolean flipped;
        private final List<SocketChannel> open = new CopyOnWriteArrayList<>();

        FlippingRelay(int target, long flipAt) throws IOException {
            this.flipAt = flipAt;
            this.server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        SocketChannel in = server.accept();
                        SocketChannel out = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), target));
                        open.add(in);
                        open.add(out);
                        Thread.ofVirtual().start(() -> pump(in, out, true));
                        Thread.ofVirtual().start(() -> pump(out, in, false));
                    }
                } catch (IOException e) {
                    // closed
                }
            });
        }

        int port() throws IOException {
            return ((InetSocketAddress) server.getLocalAddress()).getPort();
        }

        boolean flipped() {
            return flipped;
        }

        private void pump(SocketChannel from, SocketChannel to, boolean flip) {
            try (from; to) {
                ByteBuffer b = ByteBuffer.allocate(8 * 1024);
                long passed = 0;
                int n;
                while ((n = from.read(b.clear())) > 0) {
                    if (flip && passed <= flipAt && flipAt < passed + n) {
                        int i = (int) (flipAt - passed);
                        b.put(i, (byte) (b.get(i) ^ 0x01));
                        flipped = true;
                    }
                    passed += n;
                    LmProtocol.writeFully(to, b.flip());
                }
            } catch (IOException e) {
                // either side hung up
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (SocketChannel c : open) {
                c.close();
            }
        }
    }

    /**
     * A relay of a PD port that passes the first {@code forward} bytes of the sender's stream and the
     * first {@code backward} bytes of the receiver's, and holds the rest back (never closes): by
     * default, every write but no acknowledgement. With a gate, what the receiver sends beyond
     * {@code backward} is held only until {@link #release()}.
     */
    static final class AckHoldingRelay implements AutoCloseable {
        private final ServerSocketChannel server;
        private final List<SocketChannel> open = new CopyOnWriteArrayList<>();
        private final CountDownLatch gate;

        AckHoldingRelay(int target) throws IOException {
            this(target, Long.MAX_VALUE, HANDSHAKE_ANSWER_BYTES);
        }

        AckHoldingRelay(int target, long forward, long backward) throws IOException {
            this(target, forward, backward, null);
        }

        AckHoldingRelay(int target, long forward, long backward, CountDownLatch gate) throws IOException {
            this.gate = gate;
            this.server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        SocketChannel in = server.accept();
                        SocketChannel out = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), target));
                        open.add(in);
                        open.add(out);
                        Thread.ofVirtual().start(() -> pass(in, out, forward, null));
                        Thread.ofVirtual().start(() -> pass(out, in, backward, gate));
                    }
                } catch (IOException e) {
                    // closed
                }
            });
        }

        /** The server's two handshake answers: SUCCESS with its nonce and proof, then SUCCESS. */
        static final long HANDSHAKE_ANSWER_BYTES = 2L * LmProtocol.SERVER_HEADER_BYTES + LmSession.ANSWER_BYTES;

        int port() throws IOException {
            return ((InetSocketAddress) server.getLocalAddress()).getPort();
        }

        /** Lets what the receiver sends beyond the limit through, from now on. */
        void release() {
            gate.countDown();
        }

        private static void pass(SocketChannel from, SocketChannel to, long limit, CountDownLatch gate) {
            try {
                ByteBuffer b = ByteBuffer.allocate(8 * 1024);
                long passed = 0;
                while (passed < limit || gate != null) {
                    if (passed >= limit) {
                        gate.await();
                        limit = Long.MAX_VALUE;
                    }
                    b.clear().limit((int) Math.min(b.capacity(), limit - passed));
                    int n = from.read(b);
                    if (n < 0) {
                        break;
                    }
                    passed += n;
                    LmProtocol.writeFully(to, b.flip());
                }
            } catch (IOException e) {
                // either side hung up
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
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
