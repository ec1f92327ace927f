package lmcache4j.engine.remote.lm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/** Random, truncated, oversized and malformed frames never take the server down. */
@Timeout(120)
class LmServerFuzzTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

    @Test
    void garbageThenAWellFormedClientStillWorks() throws Exception {
        for (Optional<String> token : java.util.List.of(Optional.<String>empty(), Optional.of("tok"))) {
            fuzz(token);
        }
    }

    private static void fuzz(Optional<String> token) throws Exception {
        long seed = 42 + token.map(String::hashCode).orElse(0);
        Random rnd = new Random(seed);
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 1 << 20, token, 4096)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            for (int i = 0; i < 300 && System.nanoTime() < deadline; i++) {
                byte[] frame = frame(rnd, token);
                try (SocketChannel ch = SocketChannel.open(new InetSocketAddress(LOOPBACK, server.port()))) {
                    ch.setOption(StandardSocketOptions.SO_LINGER, rnd.nextBoolean() ? 0 : -1);
                    try {
                        LmProtocol.writeFully(ch, ByteBuffer.wrap(frame));
                        if (rnd.nextInt(4) == 0) {
                            ch.shutdownOutput();
                            ch.read(ByteBuffer.allocate(64)); // whatever comes back, if anything
                        }
                    } catch (IOException ignored) {
                        // the server may close first
                    }
                }
            }
            assertTrue(server.isRunning(), "server died, seed " + seed);
            assertTrue(server.stats().protocolErrors() > 0);
            String q = token.map(t -> "?token=" + t).orElse("");
            try (LmConnector lm = LmConnector.connect(URI.create("lm://127.0.0.1:" + server.port() + q));
                 LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
                lm.ping().get(10, TimeUnit.SECONDS);
                MemoryObj obj = TestChunks.chunk(cpu, 9, AllocationMode.NO_EVICTION).orElseThrow();
                // the chunk (64 KiB) is over this server's 4 KiB frame: the server closes that connection
                // (a PUT has no reply, so the client may or may not notice)
                try (LmConnector other = LmConnector.connect(URI.create("lm://127.0.0.1:" + server.port() + q))) {
                    other.put(TestChunks.key(1), RemoteMetadata.forObject(obj), obj.segment()).handle((v, e) -> null)
                            .get(10, TimeUnit.SECONDS);
                }
                RemoteMetadata small = new RemoteMetadata(1024, RemoteMetadata.forObject(obj).format(),
                        Optional.of(obj.dtype()), lmcache4j.allocator.TensorShape.of(1, 2, 8, 32));
                lm.put(TestChunks.key(2), small, obj.segment().asSlice(0, 1024)).get(10, TimeUnit.SECONDS);
                assertTrue(lm.exists(TestChunks.key(2)).get(10, TimeUnit.SECONDS));
                assertEquals(false, lm.exists(TestChunks.key(1)).get(10, TimeUnit.SECONDS));
                obj.release();
            }
            assertTrue(server.isRunning());
            assertEquals(0, server.stats().puts() - 1, "only the small put was stored");
        }
    }

    private static byte[] frame(Random rnd, Optional<String> token) {
        int kind = rnd.nextInt(7);
        switch (kind) {
            case 0: { // pure noise
                byte[] b = new byte[rnd.nextInt(400)];
                rnd.nextBytes(b);
                return b;
            }
            case 1: { // truncated valid header
                byte[] h = LmProtocol.encodeClient(LmProtocol.GET, 0, "m@1@0@ab@bfloat16");
                return java.util.Arrays.copyOf(h, rnd.nextInt(h.length));
            }
            case 2: { // oversized PUT
                return header(LmProtocol.PUT, 1 << 24 + rnd.nextInt(6), "m@1@0@ab@bfloat16");
            }
            case 3: { // PUT whose payload is cut short
                byte[] h = header(LmProtocol.PUT, 2048, "m@1@0@ab@bfloat16");
                return java.util.Arrays.copyOf(h, h.length + rnd.nextInt(2048));
            }
            case 4: { // random command and ints, valid key field
                byte[] h = LmProtocol.encodeClient(rnd.nextInt(), rnd.nextInt(), "k");
                ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 2; i < 8; i++) {
                    b.putInt(4 * i, rnd.nextInt());
                }
                return h;
            }
            case 5: { // bad key bytes
                byte[] h = LmProtocol.encodeClient(LmProtocol.EXIST, 0, "k");
                for (int i = 32; i < h.length; i++) {
                    h[i] = (byte) (0x80 | rnd.nextInt(0x80));
                }
                return h;
            }
            default: { // AUTH with bogus lengths / tokens, or a negative length
                return header(rnd.nextBoolean() ? LmProtocol.AUTH : LmProtocol.PUT, rnd.nextBoolean() ? -5 : 1 << 20, "");
            }
        }
    }

    private static byte[] header(int command, int length, String key) {
        byte[] h = LmProtocol.encodeClient(command, length, key);
        return h;
    }
}
