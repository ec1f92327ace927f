package lmcache4j.server.lm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Timeout;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmConnector;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

@Timeout(60)
class LmServerConnectorTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final int MB = 1 << 20;

    static <T> T await(java.util.concurrent.CompletableFuture<T> f) throws Exception {
        return f.get(20, TimeUnit.SECONDS);
    }

    static LmConnector connector(LmCacheServer s, String query) {
        return LmConnector.connect(URI.create("lm://127.0.0.1:" + s.port() + query));
    }

    private static Optional<MemoryObj> alloc(LocalCpuBackend cpu, RemoteMetadata m) {
        return cpu.allocate(m.toShape(), m.dtype().orElseThrow(), m.format(), AllocationMode.NO_EVICTION);
    }

    @Test
    void putGetExistsRemovePingRoundTrip() throws Exception {
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 64L * MB, Optional.empty(), 16 * MB);
             LmConnector lm = connector(server, "");
             LocalCpuBackend cpu = TestChunks.cpuTier(16, "LRU", 1)) {
            assertEquals("lm://127.0.0.1:" + server.port(), lm.url());
            await(lm.ping());
            for (int i = 0; i < 6; i++) {
                MemoryObj obj = TestChunks.chunk(cpu, 10 + i, AllocationMode.NO_EVICTION).orElseThrow();
                // distinct bytes beyond the marker: the whole payload must come back identical
                obj.segment().set(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, 8, 0x12345678 + i);
                await(lm.put(TestChunks.key(i), RemoteMetadata.forObject(obj), obj.segment()));
                assertTrue(await(lm.exists(TestChunks.key(i))));
                MemoryObj back = await(lm.get(TestChunks.key(i), m -> alloc(cpu, m))).orElseThrow();
                assertEquals(-1L, back.segment().mismatch(obj.segment()));
                assertEquals(obj.shape(), back.shape());
                assertEquals(obj.dtype(), back.dtype());
                back.release();
                obj.release();
            }
            // many concurrent operations over the pool
            var futures = new java.util.ArrayList<java.util.concurrent.CompletableFuture<Boolean>>();
            for (int r = 0; r < 50; r++) {
                futures.add(lm.exists(TestChunks.key(r % 8)));
            }
            for (int r = 0; r < 50; r++) {
                assertEquals(r % 8 < 6, await(futures.get(r)));
            }
            assertFalse(await(lm.exists(TestChunks.key(99))));
            assertTrue(await(lm.get(TestChunks.key(99), m -> alloc(cpu, m))).isEmpty());
            assertTrue(await(lm.remove(TestChunks.key(0))));
            assertFalse(await(lm.remove(TestChunks.key(0))));
            assertFalse(await(lm.exists(TestChunks.key(0))));
            // no memory to allocate into: a miss, and the connection stays usable
            assertTrue(await(lm.get(TestChunks.key(1), m -> Optional.empty())).isEmpty());
            assertTrue(await(lm.exists(TestChunks.key(1))));
            LmCacheServer.Stats st = server.stats();
            assertEquals(6, st.puts());
            assertEquals(5, st.entries());
            assertEquals(0, st.protocolErrors());
        }
    }

    @Test
    void lruEvictionUnderMaxBytes() throws Exception {
        long entry = TestChunks.CHUNK_BYTES + RemoteMetadata.BYTES;
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 3 * entry, Optional.empty(), 16 * MB);
             LmConnector lm = connector(server, "?pool=1");
             LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            MemoryObj obj = TestChunks.chunk(cpu, 7, AllocationMode.NO_EVICTION).orElseThrow();
            RemoteMetadata meta = RemoteMetadata.forObject(obj);
            for (int i = 0; i < 3; i++) {
                await(lm.put(TestChunks.key(i), meta, obj.segment()));
            }
            assertTrue(await(lm.exists(TestChunks.key(0)))); // touch 0: 1 is now the eldest
            assertTrue(await(lm.get(TestChunks.key(0), m -> alloc(cpu, m))).map(MemoryObj::release).orElseThrow());
            await(lm.put(TestChunks.key(3), meta, obj.segment()));
            assertTrue(await(lm.exists(TestChunks.key(0))));
            assertFalse(await(lm.exists(TestChunks.key(1))));
            assertTrue(await(lm.exists(TestChunks.key(2))));
            assertTrue(await(lm.exists(TestChunks.key(3))));
            assertEquals(1, server.stats().evictions());
            assertEquals(3 * entry, server.stats().bytes());
            obj.release();
        }
        // an entry larger than maxBytes is refused (and counted)
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 1000, Optional.empty(), 16 * MB);
             LmConnector lm = connector(server, "?pool=1");
             LocalCpuBackend cpu = TestChunks.cpuTier(1, "LRU", 1)) {
            MemoryObj obj = TestChunks.chunk(cpu, 7, AllocationMode.NO_EVICTION).orElseThrow();
            // the put fails: the EXIST that follows every PUT finds nothing stored
            ExecutionException refused = assertThrows(ExecutionException.class,
                    () -> await(lm.put(TestChunks.key(0), RemoteMetadata.forObject(obj), obj.segment())));
            assertTrue(refused.getCause().getMessage().contains("did not store"), refused.getCause().toString());
            assertFalse(await(lm.exists(TestChunks.key(0))));
            assertEquals(1, server.stats().refusedPuts());
            assertEquals(0, server.stats().evictions());
            obj.release();
        }
    }

    @ParameterizedTest
    @EnumSource(lmcache4j.engine.remote.lm.PayloadTag.Algorithm.class)
    void withATokenPayloadsCarryTagsBothWaysAndAnAlteredPutStoresNothing(
            lmcache4j.engine.remote.lm.PayloadTag.Algorithm algorithm) throws Exception {
        String property = lmcache4j.engine.remote.lm.PayloadTag.PREFERENCE_PROPERTY;
        String before = System.getProperty(property);
        System.setProperty(property, algorithm.toString()); // server and client both prefer it: the handshake chooses it
        try {
            taggedRoundTripAndAlteredPut(algorithm);
        } finally {
            if (before == null) {
                System.clearProperty(property);
            } else {
                System.setProperty(property, before);
            }
        }
    }

    private void taggedRoundTripAndAlteredPut(lmcache4j.engine.remote.lm.PayloadTag.Algorithm algorithm) throws Exception {
        String token = "a-long-enough-token-for-tests";
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 64L * MB, Optional.of(token), 16 * MB);
             LmConnector lm = connector(server, "?token=" + token);
             LocalCpuBackend cpu = TestChunks.cpuTier(16, "LRU", 1)) {
            MemoryObj obj = TestChunks.chunk(cpu, 3, AllocationMode.NO_EVICTION).orElseThrow();
            await(lm.put(TestChunks.key(3), RemoteMetadata.forObject(obj), obj.segment()));
            MemoryObj back = await(lm.get(TestChunks.key(3), m -> alloc(cpu, m))).orElseThrow();
            assertEquals(-1, back.segment().mismatch(obj.segment()), "tagged both ways, identical");
            back.release();

            // A client with the token whose PUT payload was altered after tagging: nothing is stored.
            try (java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open(
                    new java.net.InetSocketAddress(LOOPBACK, server.port()))) {
                lmcache4j.engine.remote.lm.LmSession session = lmcache4j.engine.remote.lm.LmSession.authenticate(ch,
                        token.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                assertEquals(algorithm, session.algorithm());
                RemoteMetadata meta = RemoteMetadata.forObject(obj);
                byte[] head = LmProtocol.encodeClient(LmProtocol.PUT, meta, TestChunks.key(4).toKeyString());
                byte[] payload = obj.segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                byte[] tag = session.clientToServer().next().update(head).update(payload).finish();
                payload[payload.length - 1] ^= 1;
                LmProtocol.writeFully(ch, java.nio.ByteBuffer.wrap(head), java.nio.ByteBuffer.wrap(payload),
                        java.nio.ByteBuffer.wrap(tag));
                assertEquals(-1, ch.read(java.nio.ByteBuffer.allocate(1)), "the server closes the connection");
            }
            obj.release();
            assertFalse(await(lm.exists(TestChunks.key(4))), "the altered PUT stored nothing");
            assertTrue(await(lm.exists(TestChunks.key(3))));
            assertEquals(1, server.stats().entries());
        }
    }

    @Test
    void tokenRequired() throws Exception {
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 8L * MB, Optional.of("s3cret"), MB)) {
            try (LmConnector none = connector(server, "?timeout_ms=3000")) {
                assertThrows(ExecutionException.class, () -> await(none.ping()));
                assertThrows(ExecutionException.class, () -> await(none.exists(TestChunks.key(1))));
            }
            try (LmConnector wrong = connector(server, "?token=nope")) {
                // The server's proof does not check out under the wrong token: the client stops there.
                ExecutionException e = assertThrows(ExecutionException.class, () -> await(wrong.ping()));
                assertTrue(e.getCause().getMessage().contains("could not prove it holds the token"),
                        e.getCause().getMessage());
            }
            assertEquals(0, server.stats().authFailures(), "the wrong client never sent a proof");
            try (LmConnector right = connector(server, "?token=s3cret")) {
                await(right.ping());
                assertFalse(await(right.exists(TestChunks.key(1))));
                assertFalse(right.url().contains("s3cret"));
            }
            assertTrue(server.isRunning());
        }
    }

    @Test
    void payloadsLiveInTheServersPoolAndEveryPathGivesTheirMemoryBack() throws Exception {
        long chunk = TestChunks.CHUNK_BYTES; // 64 KiB: one page of the server's pool
        assertEquals(LmCacheServer.PAGE_BYTES, chunk);
        // room for three entries: their pages plus what each entry is charged beyond them
        long room = 3 * (chunk + LmCacheServer.ENTRY_CHARGE_BYTES);
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, room, Optional.empty(), 16 * MB);
             LmConnector lm = connector(server, "?pool=1");
             LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
             java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) { // the connector sends from its own thread
            MemoryObj[] src = new MemoryObj[6];
            for (int i = 0; i < src.length; i++) {
                src[i] = TestChunks.chunk(cpu, 20 + i, AllocationMode.NO_EVICTION).orElseThrow();
            }
            RemoteMetadata meta = RemoteMetadata.forObject(src[0]);
            for (int n = 0; n < 5; n++) { // a replaced entry gives its memory back at once
                await(lm.put(TestChunks.key(0), meta, src[0].segment()));
            }
            // A PUT has no reply; a request on the same (single) connection is answered after it.
            assertTrue(await(lm.exists(TestChunks.key(0))));
            assertEquals(chunk, server.stats().poolUsedBytes());
            assertEquals(0, server.stats().evictions());
            await(lm.put(TestChunks.key(1), meta, src[1].segment()));
            await(lm.put(TestChunks.key(2), meta, src[2].segment()));
            await(lm.put(TestChunks.key(3), meta, src[3].segment())); // the pool is full: key 0 goes
            assertFalse(await(lm.exists(TestChunks.key(0))));
            assertEquals(1, server.stats().evictions());
            assertEquals(3 * chunk, server.stats().poolUsedBytes());

            // a payload larger than the pool is refused, drained, and the connection stays in step
            java.lang.foreign.MemorySegment big = arena.allocate(4 * chunk);
            RemoteMetadata bigMeta = new RemoteMetadata((int) (4 * chunk), lmcache4j.allocator.MemoryFormat.BINARY,
                    Optional.of(lmcache4j.allocator.DType.UINT8), lmcache4j.allocator.TensorShape.of((int) (4 * chunk), 0, 0, 0));
            assertThrows(ExecutionException.class, () -> await(lm.put(TestChunks.key(9), bigMeta, big)));
            assertEquals(1, server.stats().evictions(), "a payload that can never fit evicts nothing");
            MemoryObj back = await(lm.get(TestChunks.key(3), m -> alloc(cpu, m))).orElseThrow();
            assertEquals(1, server.stats().refusedPuts());
            assertEquals(-1L, back.segment().mismatch(src[3].segment()));
            back.release();

            // several clients putting and getting under eviction: every hit is the bytes of its key
            java.util.List<java.util.concurrent.Future<Integer>> workers = new java.util.ArrayList<>();
            try (var pool = java.util.concurrent.Executors.newFixedThreadPool(4);
                 LmConnector many = connector(server, "?pool=4")) {
                for (int t = 0; t < 4; t++) {
                    int seed = t;
                    workers.add(pool.submit(() -> {
                        java.util.Random rnd = new java.util.Random(seed);
                        int hits = 0;
                        for (int op = 0; op < 60; op++) {
                            int k = rnd.nextInt(src.length);
                            if (rnd.nextBoolean()) {
                                try {
                                    await(many.put(TestChunks.key(k), meta, src[k].segment()));
                                } catch (ExecutionException e) { // another client's PUT evicted it before the acknowledging EXIST
                                    assertTrue(e.getCause().getMessage().contains("did not store"), e.getCause().toString());
                                }
                            } else {
                                Optional<MemoryObj> got = await(many.get(TestChunks.key(k), m -> alloc(cpu, m)));
                                if (got.isPresent()) {
                                    assertEquals(-1L, got.get().segment().mismatch(src[k].segment()), "key " + k + " served wrong bytes");
                                    got.get().release();
                                    hits++;
                                }
                            }
                        }
                        return hits;
                    }));
                }
                int hits = 0;
                for (var w : workers) {
                    hits += w.get(60, TimeUnit.SECONDS);
                }
                assertTrue(hits > 0);
            }
            // the 4-connection client is closed: its last PUTs were read before its connections closed
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            LmCacheServer.Stats st = server.stats();
            while (st.entries() * chunk != st.poolUsedBytes() && System.nanoTime() < deadline) {
                Thread.sleep(10);
                st = server.stats();
            }
            assertEquals(st.entries() * chunk, st.poolUsedBytes(), "pool memory not given back: " + st);
            for (int k = 0; k < src.length; k++) {
                await(lm.remove(TestChunks.key(k)));
            }
            assertEquals(0, server.stats().poolUsedBytes());
            assertEquals(0, server.stats().bytes());
            for (MemoryObj o : src) {
                o.release();
            }
        }
    }

    @Test
    void listIsAnsweredWithFail() throws Exception {
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, MB, Optional.empty(), MB);
             SocketChannel ch = SocketChannel.open(new InetSocketAddress(LOOPBACK, server.port()))) {
            // LMCache's server sends nothing for LIST; lmcache4j's answers FAIL so that no client waits forever
            LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.LIST, 0, LmProtocol.PLACEHOLDER_KEY)));
            assertEquals(LmProtocol.FAIL, LmProtocol.replyCode(LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES)));
            LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.HEALTH, 0, "")));
            assertEquals(LmProtocol.SUCCESS, LmProtocol.replyCode(LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES)));
        }
    }

    @Test
    void getTimesOutAgainstASilentServer() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50, LOOPBACK);
             LmConnector lm = LmConnector.connect(URI.create("lm://127.0.0.1:" + silent.getLocalPort() + "?timeout_ms=500"));
             LocalCpuBackend cpu = TestChunks.cpuTier(1, "LRU", 1)) {
            Thread acceptor = Thread.ofVirtual().start(() -> {
                try {
                    Socket s = silent.accept(); // accept and never answer
                    Thread.sleep(10_000);
                    s.close();
                } catch (Exception ignored) {
                    // closed by the test
                }
            });
            long t0 = System.nanoTime();
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> lm.get(TestChunks.key(1), m -> alloc(cpu, m)).get(10, TimeUnit.SECONDS));
            assertTrue(e.getCause().getMessage().contains("timed out"), e.getCause().toString());
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5));
            acceptor.interrupt();
        }
    }

    @Test
    void serverKilledMidOperationFailsTheFuture() throws Exception {
        LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 64L * MB, Optional.empty(), 16 * MB);
        try (LmConnector lm = connector(server, "?pool=2");
             LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            MemoryObj obj = TestChunks.chunk(cpu, 3, AllocationMode.NO_EVICTION).orElseThrow();
            await(lm.put(TestChunks.key(1), RemoteMetadata.forObject(obj), obj.segment()));
            // the allocate callback runs mid-GET (header read, payload not yet): stop the server there
            var f = lm.get(TestChunks.key(1), m -> {
                server.close();
                return alloc(cpu, m);
            });
            try {
                Optional<MemoryObj> got = f.get(20, TimeUnit.SECONDS);
                // the payload may already have been in the socket buffer; then it must be whole
                got.ifPresent(o -> {
                    assertEquals(-1L, o.segment().mismatch(obj.segment()));
                    o.release();
                });
            } catch (ExecutionException expected) {
                // the normal outcome
            }
            assertThrows(ExecutionException.class, () -> await(lm.ping()));
            assertThrows(ExecutionException.class, () -> await(lm.exists(TestChunks.key(1))));
            obj.release();
        } finally {
            server.close();
        }
    }

    @Test
    void aPeerThatIsNotAnLmServerIsAFailureThatSaysSoNotAMiss() throws Exception {
        try (ServerSocket other = new ServerSocket(0, 50, LOOPBACK);
             LmConnector lm = LmConnector.connect(URI.create("lm://127.0.0.1:" + other.getLocalPort() + "?timeout_ms=3000"))) {
            Thread peer = Thread.ofVirtual().start(() -> { // answers every request as Redis would
                try (Socket s = other.accept()) {
                    byte[] request = new byte[LmProtocol.CLIENT_HEADER_BYTES];
                    while (s.getInputStream().readNBytes(request, 0, request.length) == request.length) {
                        s.getOutputStream().write("-ERR unknown command, with args beginning with:\r\n".getBytes());
                    }
                } catch (java.io.IOException ignored) {
                    // the test closed it
                }
            });
            ExecutionException e = assertThrows(ExecutionException.class, () -> await(lm.exists(TestChunks.key(1))));
            assertTrue(e.getCause().getMessage().contains("not an lm:// server"), e.getCause().toString());
            peer.interrupt();
        }
    }

    @Test
    void connectErrors() {
        assertThrows(IllegalArgumentException.class, () -> LmConnector.connect(URI.create("redis://h:1")));
        assertThrows(IllegalArgumentException.class, () -> LmConnector.connect(URI.create("lm://host")));
        assertThrows(IllegalArgumentException.class, () -> LmConnector.connect(URI.create("lm://h:1?bogus=1")));
        assertThrows(IllegalArgumentException.class, () -> LmConnector.connect(URI.create("lm://h:1?pool=x")));
        assertThrows(IllegalArgumentException.class, () -> LmConnector.connect(URI.create("lm://h:1?token=")));
        LmConnector c = LmConnector.connect(URI.create("lm://h:1?token=abc&timeout_ms=100&pool=2"));
        c.close();
        assertThrows(ExecutionException.class, () -> await(c.ping()));
    }

    @Test
    void closedConnectorFailsAndUnreachableServerFails() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, LOOPBACK)) {
            port = s.getLocalPort();
        }
        try (LmConnector lm = LmConnector.connect(URI.create("lm://127.0.0.1:" + port + "?timeout_ms=2000"))) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> await(lm.ping()));
            assertTrue(e.getCause().getMessage().contains("cannot connect"), e.getCause().toString());
        }
        assertTrue(Duration.ofMillis(1).toMillis() > 0);
        CacheEngineKey unused = TestChunks.key(0);
        assertTrue(unused.toKeyString().length() < LmProtocol.KEY_BYTES);
    }
}
