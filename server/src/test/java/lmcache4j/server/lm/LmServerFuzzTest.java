package lmcache4j.server.lm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmConnector;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/**
 * Random, truncated, oversized and malformed frames never take the server down, and a well-formed
 * client is served byte for byte afterwards. {@code -Dlmcache4j.fuzz.frames=N} sets how many
 * malformed frames are sent in all (default 100,000, each on a connection of its own, since the
 * server closes the connection that sent one); a long run: {@code ./lmcache4j test
 * -Dtest=LmServerFuzzTest -Dlmcache4j.fuzz.frames=2000000}.
 */
class LmServerFuzzTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final String KEY = "m@1@0@ab@bfloat16";
    private static final int CLIENTS = 4;

    @Test
    void garbageThenAWellFormedClientStillWorks() throws Exception {
        long frames = Long.getLong("lmcache4j.fuzz.frames", 100_000);
        fuzz(Optional.empty(), frames - frames / 4);
        fuzz(Optional.of("tok"), frames / 4);
    }

    private static void fuzz(Optional<String> token, long frames) throws Exception {
        long seed = 42 + token.map(String::hashCode).orElse(0);
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 1 << 20, token, 4096)) {
            long t0 = System.nanoTime();
            long sent = 0;
            try (ExecutorService clients = Executors.newFixedThreadPool(CLIENTS)) {
                List<Future<Long>> done = new ArrayList<>();
                for (int t = 0; t < CLIENTS; t++) {
                    long share = frames / CLIENTS + (t < frames % CLIENTS ? 1 : 0);
                    Random rnd = new Random(seed * 31 + t);
                    done.add(clients.submit(() -> send(server, token, rnd, share)));
                }
                for (Future<Long> f : done) {
                    sent += f.get(10, TimeUnit.MINUTES);
                }
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            System.out.printf("LmServerFuzzTest: %,d malformed frames (token %s) in %.1f s, %,.0f frames/s; server %s%n",
                    sent, token.isPresent(), seconds, sent / seconds, server.stats());
            assertEquals(frames, sent);
            assertTrue(server.isRunning(), "server died, seed " + seed);
            assertTrue(server.stats().protocolErrors() > frames / 2, server.stats().toString());
            assertEquals(0, server.stats().acceptErrors(), server.stats().toString());
            wellFormedClientIsServedExactly(server, token);
            awaitNoOpenConnections(server);
            LmCacheServer.Stats st = server.stats();
            assertEquals(st.entries() * LmCacheServer.ENTRY_CHARGE_BYTES + st.poolUsedBytes(), st.chargedBytes(),
                    "pages held by nothing: " + st);
        }
    }

    /** Sends {@code count} malformed frames, each on a new connection; returns how many were sent. */
    private static long send(LmCacheServer server, Optional<String> token, Random rnd, long count) throws IOException {
        InetSocketAddress at = new InetSocketAddress(LOOPBACK, server.port());
        for (long i = 0; i < count; i++) {
            try (SocketChannel ch = SocketChannel.open(at)) {
                ch.setOption(StandardSocketOptions.SO_LINGER, 0); // a reset, no TIME_WAIT: 10^5 connections fit the port range
                boolean authenticated = token.isEmpty();
                if (!authenticated && rnd.nextInt(3) > 0) { // mostly past the handshake, to reach the commands
                    LmSession.authenticate(ch, token.get().getBytes(StandardCharsets.UTF_8));
                    authenticated = true;
                }
                if (authenticated && rnd.nextInt(8) == 0) { // a valid request first: the bad frame then arrives mid-conversation
                    LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.EXIST, 0, KEY)));
                    LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES);
                }
                try {
                    LmProtocol.writeFully(ch, ByteBuffer.wrap(frame(rnd)));
                    if (rnd.nextInt(16) == 0) {
                        ch.shutdownOutput();
                        ch.read(ByteBuffer.allocate(64)); // whatever comes back, if anything
                    }
                } catch (IOException ignored) {
                    // the server may close first
                }
            }
        }
        return count;
    }

    /** A frame the server must refuse (or, for a few cut-short kinds, must wait out and then drop). */
    static byte[] frame(Random rnd) {
        int keyAt = LmProtocol.CLIENT_HEADER_BYTES - LmProtocol.KEY_BYTES;
        switch (rnd.nextInt(11)) {
            case 0 -> { // pure noise
                byte[] b = new byte[1 + rnd.nextInt(400)];
                rnd.nextBytes(b);
                return b;
            }
            case 1 -> { // truncated valid header
                byte[] h = LmProtocol.encodeClient(LmProtocol.GET, 0, KEY);
                return Arrays.copyOf(h, 1 + rnd.nextInt(h.length - 1));
            }
            case 2 -> { // PUT over the maximum frame
                return LmProtocol.encodeClient(LmProtocol.PUT, 4097 + rnd.nextInt(1 << 30), KEY);
            }
            case 3 -> { // PUT whose payload is cut short
                byte[] h = putHeader(2048);
                return Arrays.copyOf(h, h.length + rnd.nextInt(2048));
            }
            case 4 -> { // an unknown command with random ints and a valid key field
                byte[] h = LmProtocol.encodeClient(1000 + rnd.nextInt(1 << 20), rnd.nextInt(), "k");
                ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 2; i < 9; i++) {
                    b.putInt(4 * i, rnd.nextInt());
                }
                return h;
            }
            case 5 -> { // key bytes that are not UTF-8
                byte[] h = LmProtocol.encodeClient(LmProtocol.EXIST, 0, "k");
                for (int i = keyAt; i < h.length; i++) {
                    h[i] = (byte) (0x80 | rnd.nextInt(0x80));
                }
                return h;
            }
            case 6 -> { // a handshake message with a bogus length, or a PUT with a negative one
                int command = switch (rnd.nextInt(4)) {
                    case 0 -> LmProtocol.AUTH_HELLO;
                    case 1 -> LmProtocol.AUTH_PROOF;
                    case 2 -> LmProtocol.AUTH_RETIRED;
                    default -> LmProtocol.PUT;
                };
                return LmProtocol.encodeClient(command,
                        rnd.nextBoolean() ? -1 - rnd.nextInt(1000) : LmProtocol.MAX_TOKEN_BYTES + 1 + rnd.nextInt(1000), "");
            }
            case 7 -> { // a control character in the key
                byte[] h = LmProtocol.encodeClient(LmProtocol.GET, 0, KEY);
                h[keyAt + rnd.nextInt(KEY.length())] = (byte) rnd.nextInt(0x20);
                return h;
            }
            case 8 -> { // the older LMCache's 182-byte header, 8 ints: its key no longer lines up
                ByteBuffer b = ByteBuffer.allocate(182 + 4).order(ByteOrder.LITTLE_ENDIAN);
                b.putInt(LmProtocol.GET).putInt(0).putInt(1).putInt(2).putInt(0).putInt(0).putInt(0).putInt(0);
                b.put(LmProtocol.keyField(KEY));
                return Arrays.copyOf(b.array(), 182);
            }
            case 9 -> { // PUT with metadata no tensor has (bad format, dtype or shape)
                byte[] h = putHeader(64);
                ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN).putInt(4 * (2 + rnd.nextInt(2)), 1000 + rnd.nextInt(1000));
                return Arrays.copyOf(h, h.length + 64);
            }
            default -> { // a command that needs a key, with a blank key field
                return LmProtocol.encodeClient(rnd.nextBoolean() ? LmProtocol.GET : LmProtocol.REMOVE, 0, "");
            }
        }
    }

    private static byte[] putHeader(int length) {
        RemoteMetadata meta = new RemoteMetadata(length, lmcache4j.allocator.MemoryFormat.BINARY,
                Optional.of(lmcache4j.allocator.DType.UINT8), lmcache4j.allocator.TensorShape.of(length, 0, 0, 0));
        return LmProtocol.encodeClient(LmProtocol.PUT, meta, KEY);
    }

    private static void wellFormedClientIsServedExactly(LmCacheServer server, Optional<String> token) throws Exception {
        String q = token.map(t -> "?token=" + t).orElse("");
        try (LmConnector lm = LmConnector.connect(URI.create("lm://127.0.0.1:" + server.port() + q));
             LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            lm.ping().get(10, TimeUnit.SECONDS);
            MemoryObj obj = TestChunks.chunk(cpu, 9, AllocationMode.NO_EVICTION).orElseThrow();
            // the chunk (64 KiB) is over this server's 4 KiB frame: the server closes that connection and the put fails
            try (LmConnector other = LmConnector.connect(URI.create("lm://127.0.0.1:" + server.port() + q))) {
                ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                        () -> other.put(TestChunks.key(1), RemoteMetadata.forObject(obj), obj.segment()).get(10, TimeUnit.SECONDS));
                assertFalse(e.getCause() instanceof AssertionError);
            }
            byte[] payload = new byte[1024];
            new Random(7).nextBytes(payload);
            obj.segment().asSlice(0, 1024).copyFrom(java.lang.foreign.MemorySegment.ofArray(payload));
            RemoteMetadata small = new RemoteMetadata(1024, RemoteMetadata.forObject(obj).format(),
                    Optional.of(obj.dtype()), lmcache4j.allocator.TensorShape.of(2, 1, 8, 32));
            lm.put(TestChunks.key(2), small, obj.segment().asSlice(0, 1024)).get(10, TimeUnit.SECONDS);
            assertFalse(lm.exists(TestChunks.key(1)).get(10, TimeUnit.SECONDS));
            MemoryObj back = lm.get(TestChunks.key(2), m -> cpu.allocate(m.toShape(), m.dtype().orElseThrow(), m.format(),
                    AllocationMode.NO_EVICTION)).get(10, TimeUnit.SECONDS).orElseThrow();
            assertEquals(-1L, back.segment().asSlice(0, 1024).mismatch(java.lang.foreign.MemorySegment.ofArray(payload)));
            back.release();
            obj.release();
        }
        assertTrue(server.isRunning());
    }

    private static void awaitNoOpenConnections(LmCacheServer server) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (server.stats().openConnections() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(0, server.stats().openConnections(), "connections left open: " + server.stats());
    }
}
