package lmcache4j.engine.pd.wire;

import static lmcache4j.engine.pd.wire.PdReceiveServerTest.CHUNK;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.CHUNK_BYTES;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.MODEL;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.TIMEOUT;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.TOKEN;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.decoder;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.push;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.pd.PlanarKv;

/**
 * A sender's ready notices to the proxy, against a notice port speaking the real keyed frames: one
 * per request after its chunks, on one kept connection; a proxy that restarted is reached on a fresh
 * connection; a refusal, a proxy of another deployment or no proxy at all leave the request
 * un-notified and counted, and never stop the push itself.
 */
class PdPusherNoticesTest {
    private static final Duration BOUND = Duration.ofSeconds(20);

    /** What the fake proxy does with each notice. */
    private enum Answer { OK, REFUSED, OK_THEN_HANG_UP }

    /** A notice port: proves {@code token}, records each notice, answers as told. */
    private static final class NoticePort implements AutoCloseable {
        final ServerSocket socket = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        final List<String> notices = new CopyOnWriteArrayList<>();
        final AtomicInteger connections = new AtomicInteger();
        volatile Answer answer = Answer.OK;

        NoticePort(byte[] token) throws IOException {
            Thread.ofVirtual().start(() -> {
                while (!socket.isClosed()) {
                    try {
                        Socket s = socket.accept();
                        connections.incrementAndGet();
                        Thread.ofVirtual().start(() -> serve(s, token));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
        }

        private void serve(Socket s, byte[] token) {
            try (s; PdConnection c = PdConnection.accept(s, token, Duration.ofSeconds(5), 4_096).orElseThrow()) {
                while (true) {
                    PdConnection.Message m = (PdConnection.Message) c.receive();
                    notices.add(PdMessages.decodeProxyNotif(m.body()).reqId());
                    Answer a = answer;
                    c.sendAck(a == Answer.REFUSED ? PdConnection.REFUSED : PdConnection.OK);
                    if (a == Answer.OK_THEN_HANG_UP) {
                        return;
                    }
                }
            } catch (IOException | RuntimeException e) {
                // the sender hung up, or the handshake failed
            }
        }

        int port() {
            return socket.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private static PdPusher pusher(int proxyPort) {
        return new PdPusher(TensorMemoryAllocator.strict("staging", 64 * CHUNK_BYTES, 4096), MODEL, CHUNK,
                Optional.of(TOKEN.getBytes(StandardCharsets.UTF_8)), TIMEOUT, Optional.of("127.0.0.1"), proxyPort);
    }

    private static PdPusher.Result pushTwoChunks(PdPusher pusher, LMCacheEngine decoder, PdReceiveServer server, Arena arena,
                                                 String reqId, long seed) {
        return assertTimeoutPreemptively(BOUND, () -> push(pusher, decoder, server, tokens(2 * CHUNK, seed),
                new PlanarKv(arena, MODEL, 2 * CHUNK, seed), reqId));
    }

    @Test
    void eachRequestIsNoticedOnceAfterItsChunksOnOneKeptConnection() throws Exception {
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             NoticePort proxy = new NoticePort(TOKEN.getBytes(StandardCharsets.UTF_8)); PdPusher pusher = pusher(proxy.port())) {
            PdPusher.Result first = pushTwoChunks(pusher, decoder, server, arena, "req-a", 1);
            assertEquals(2, first.pushedChunks());
            assertTrue(first.notified());
            assertEquals(List.of("req-a"), proxy.notices, "the notice comes once the chunks are written");
            PdPusher.Result second = pushTwoChunks(pusher, decoder, server, arena, "req-b", 2);
            assertTrue(second.notified());
            assertEquals(List.of("req-a", "req-b"), proxy.notices);
            assertEquals(1, proxy.connections.get(), "one connection kept for every notice");
            assertEquals(2, pusher.stats().notices());
            assertEquals(0, pusher.stats().noticeFailures());
        }
    }

    @Test
    void aProxyThatHungUpIsReachedOnAFreshConnection() throws Exception {
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             NoticePort proxy = new NoticePort(TOKEN.getBytes(StandardCharsets.UTF_8)); PdPusher pusher = pusher(proxy.port())) {
            proxy.answer = Answer.OK_THEN_HANG_UP; // as a proxy that restarted between two requests
            assertTrue(pushTwoChunks(pusher, decoder, server, arena, "req-a", 3).notified());
            assertTrue(pushTwoChunks(pusher, decoder, server, arena, "req-b", 4).notified(), "retried on a fresh connection");
            assertEquals(List.of("req-a", "req-b"), proxy.notices);
            assertEquals(2, proxy.connections.get());
            assertEquals(0, pusher.stats().noticeFailures());
        }
    }

    @Test
    void aRefusedNoticeIsTriedOnceMoreThenCountedAndThePushStands() throws Exception {
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             NoticePort proxy = new NoticePort(TOKEN.getBytes(StandardCharsets.UTF_8)); PdPusher pusher = pusher(proxy.port())) {
            proxy.answer = Answer.REFUSED;
            PdPusher.Result r = pushTwoChunks(pusher, decoder, server, arena, "req-a", 5);
            assertFalse(r.notified());
            assertEquals(2, r.pushedChunks(), "the chunks landed all the same");
            assertEquals(List.of("req-a", "req-a"), proxy.notices, "one retry, on a fresh connection");
            assertEquals(2, proxy.connections.get());
            assertEquals(1, pusher.stats().noticeFailures());
            assertEquals(0, pusher.stats().notices());
        }
    }

    @Test
    void aProxyOfAnotherDeploymentOrNoProxyLeavesTheRequestUnnoticedAndCounted() throws Exception {
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder);
             NoticePort other = new NoticePort("another-deployment-token-0123".getBytes(StandardCharsets.UTF_8));
             PdPusher pusher = pusher(other.port())) {
            PdPusher.Result r = pushTwoChunks(pusher, decoder, server, arena, "req-a", 6);
            assertFalse(r.notified());
            assertEquals(2, r.pushedChunks());
            assertEquals(List.of(), other.notices, "no notice reaches a proxy that cannot prove the token");
            assertEquals(1, pusher.stats().noticeFailures());
        }
        int gone;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            gone = s.getLocalPort();
        }
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); PdPusher pusher = pusher(gone)) {
            PdPusher.Result r = pushTwoChunks(pusher, decoder, server, arena, "req-b", 7);
            assertFalse(r.notified());
            assertEquals(2, r.pushedChunks());
            assertEquals(1, pusher.stats().noticeFailures());
        }
    }
}
