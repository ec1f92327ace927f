package lmcache4j.server.lookup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.lookup.LookupClient;
import lmcache4j.engine.lookup.LookupWire;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * The lookup server and client over real sockets in one process: an asynchronous lookup prefetches
 * from the disk tier and the retrieve consumes it, byte for byte; malformed messages are counted
 * and dropped while the server keeps answering. Closing the engine at the end checks for leaks.
 */
class LookupServerTest {
    private static final int LAYERS = 2;
    private static final int HEADS = 2;
    private static final int HEAD = 8;
    private static final int BLOCK = 16;
    private static final int BLOCKS = 64;
    private static final int CHUNK = 64;
    private static final int TOKENS = 192;
    private static final ModelMetadata MODEL = new ModelMetadata("synthetic/model", 1, 0, DType.FLOAT16, LAYERS, HEADS,
            HEAD, false);

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static LMCacheEngineConfig config(Path disk, String scheduler, String worker) {
        double chunkGb = MODEL.chunkBytes(CHUNK) / (double) (1L << 30);
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 8 * chunkGb).set("local_disk", disk.toString())
                .set("max_local_disk_size", 0.01).set("hash_seed", "0").set("enable_async_loading", true)
                .set("lookup_scheduler_url", scheduler).set("lookup_worker_urls", List.of(worker))
                .set("lookup_timeout_ms", 10_000).build();
    }

    @Test
    void anAsyncLookupPrefetchesAndTheRetrieveConsumesItWhileJunkIsDropped(@TempDir Path dir) throws Exception {
        String scheduler = "tcp://127.0.0.1:" + freePort();
        String worker = "tcp://127.0.0.1:" + freePort();
        LMCacheEngineConfig config = config(dir, scheduler, worker);
        int[] tokens = new int[TOKENS];
        long[] slots = new long[TOKENS];
        for (int t = 0; t < TOKENS; t++) {
            tokens[t] = (t * 7919) % 128_000;
            slots[t] = (BLOCKS - 1 - t / BLOCK) * (long) BLOCK + t % BLOCK;
        }
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = LMCacheEngine.create(config, MODEL, KvConnector.host(),
                List.of()); LookupServer server = LookupServer.start(engine);
             LookupClient client = LookupClient.open(config, MODEL)) {
            PagedKvCache kv = cache(arena);
            fill(kv, tokens, slots);
            engine.store(tokens, null, kv, slots, Map.of());
            ((LocalDiskBackend) engine.storage().tier(LocalDiskBackend.NAME).orElseThrow()).awaitPuts();
            engine.storage().cpu().clear(); // the prompt is on disk only: the lookup must prefetch it

            assertTrue(client.lookup(tokens, "req-1", Map.of()).isEmpty(), "the first call only sends");
            assertEquals(TOKENS, client.lookupBlocking(tokens, "req-1", Map.of(), Duration.ofSeconds(10)));
            assertEquals(TOKENS, client.lookup(tokens, "req-1", Map.of()).orElseThrow(), "kept until cleared");
            client.clearLookupStatus("req-1");
            PagedKvCache target = cache(arena);
            assertTrue(engine.retrieve(tokens, null, target, slots, Map.of(), "req-1")[TOKENS - 1]);
            for (int l = 0; l < LAYERS; l++) {
                assertEquals(-1, kv.layers().get(l).mismatch(target.layers().get(l)), "layer " + l + " read back");
            }
            assertEquals(3, engine.prefetchStats().retrievedChunks(), "every chunk came from the prefetch");

            int junk = sendJunk(worker, 3000);
            assertEquals(TOKENS, client.lookupBlocking(tokens, "req-2", Map.of(), Duration.ofSeconds(10)),
                    "still serving after the junk");
            engine.releasePrefetch("req-2");
            // The sender thread counts an answer after handing it to its socket, which can be after the
            // client already read it: wait (bounded) for the count rather than race it.
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (server.stats().answered() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            LookupServer.Stats stats = server.stats();
            assertTrue(stats.malformed() >= junk * 9 / 10, stats + " after " + junk + " junk messages");
            assertEquals(2, stats.answered(), stats.toString());
            assertEquals(0, client.stats().malformed());
        }
    }

    @Test
    void withADeploymentSecretOnlyTheDeploymentsClientIsHeard(@TempDir Path dir) throws Exception {
        Path secret = dir.resolve("secret");
        DeploymentSecret.createFile(secret);
        String scheduler = "tcp://127.0.0.1:" + freePort();
        String worker = "tcp://127.0.0.1:" + freePort();
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 0.01).set("hash_seed", "0").set("enable_async_loading", true)
                .set("lookup_scheduler_url", scheduler).set("lookup_worker_urls", List.of(worker))
                .set("lookup_timeout_ms", 10_000).set("deployment_secret_file", secret.toString()).build();
        int[] tokens = new int[TOKENS];
        for (int t = 0; t < TOKENS; t++) {
            tokens[t] = t;
        }
        try (LMCacheEngine engine = LMCacheEngine.create(config, MODEL, KvConnector.host(), List.of());
             LookupServer server = LookupServer.start(engine); LookupClient client = LookupClient.open(config, MODEL)) {
            sendPlain(worker, 200); // queued on its side; the handshake never completes, so none arrives
            assertEquals(0, client.lookupBlocking(tokens, "req-1", Map.of(), Duration.ofSeconds(10)),
                    "the deployment's client is answered (nothing cached)");
            Thread.sleep(500);
            LookupServer.Stats stats = server.stats();
            assertEquals(1, stats.messages(), "only the member's lookup was heard: " + stats);
            assertEquals(0, stats.malformed(), stats.toString());
        }
    }

    @Test
    void theServerRefusesAConfigItCannotServe(@TempDir Path dir) throws Exception {
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 0.01).set("hash_seed", "0").set("lookup_scheduler_url", "tcp://127.0.0.1:1")
                .set("lookup_worker_urls", List.of("tcp://127.0.0.1:2")).build();
        try (LMCacheEngine engine = LMCacheEngine.create(config, MODEL, KvConnector.host(), List.of())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LookupServer.start(engine));
            assertTrue(e.getMessage().contains("enable_async_loading"), e.getMessage());
        }
        IllegalArgumentException remote = assertThrows(IllegalArgumentException.class,
                () -> LookupClient.open(ConfigLoader.builder().environment(Map.of()).set("hash_seed", "0")
                        .set("lookup_scheduler_url", "tcp://192.0.2.1:5000")
                        .set("lookup_worker_urls", List.of("tcp://127.0.0.1:2")).build(), MODEL));
        assertTrue(remote.getMessage().contains("loopback"), remote.getMessage());
    }

    /** Random multipart messages that break LMCache's layout in every way a fuzzer finds; returns how many. */
    static int sendJunk(String url, int messages) throws InterruptedException {
        Random random = new Random(14);
        try (ZContext context = new OwnedZContext("test-lookup-server", 1)) {
            ZMQ.Socket push = context.createSocket(SocketType.PUSH);
            push.setLinger(5000);
            push.connect(url); // a burst right after connect: a lost poller registration would sit on it (PollerRepair)
            List<byte[]> valid = LookupWire.encodeRequest(new lmcache4j.engine.lookup.LookupRequest("junk",
                    new long[]{1, 2}, new int[]{64, 64}, Map.of()));
            for (int m = 0; m < messages; m++) {
                List<byte[]> frames = new ArrayList<>();
                int n = 1 + random.nextInt(7);
                for (int f = 0; f < n; f++) {
                    byte[] frame = random.nextBoolean() ? valid.get(f % 4).clone() : new byte[random.nextInt(20)];
                    if (frame.length > 0) {
                        frame[random.nextInt(frame.length)] = (byte) random.nextInt(256);
                    }
                    frames.add(frame);
                }
                if (n == 4) {
                    frames.set(1, new byte[]{(byte) 0xc1}); // never valid msgpack: four frames still fail
                }
                for (int f = 0; f < n; f++) {
                    push.send(frames.get(f), f < n - 1 ? ZMQ.SNDMORE : 0);
                }
            }
            Thread.sleep(200);
        }
        return messages;
    }

    /**
     * Sends {@code messages} one-frame messages from a plain (non-CURVE) PUSH socket, each waiting at
     * most 10 ms for room: a blocking send could wait forever once the failed handshake drops the
     * pipe. Returns how many the socket queued, which says nothing of what arrived.
     */
    static int sendPlain(String url, int messages) throws InterruptedException {
        try (ZContext zmq = new OwnedZContext("test-lookup-server", 1)) {
            ZMQ.Socket push = zmq.createSocket(SocketType.PUSH);
            push.setLinger(0);
            push.setSendTimeOut(10);
            push.connect(url);
            int taken = 0;
            for (int i = 0; i < messages; i++) {
                if (push.send(new byte[] {(byte) i})) {
                    taken++;
                }
            }
            Thread.sleep(200);
            return taken;
        }
    }

    static PagedKvCache cache(Arena arena) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, HEADS, HEAD, DType.FLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, HEADS, HEAD, DType.FLOAT16);
    }

    static void fill(PagedKvCache kv, int[] tokens, long[] slots) {
        for (int l = 0; l < LAYERS; l++) {
            for (int p = 0; p < 2; p++) {
                for (int t = 0; t < tokens.length; t++) {
                    long base = kv.offset(p, slots[t]);
                    for (int e = 0; e < kv.hidden(); e++) {
                        kv.layers().get(l).set(ValueLayout.JAVA_SHORT, base + 2L * e,
                                (short) (tokens[t] * 31 + t * 7 + l * 1009 + p * 503 + e));
                    }
                }
            }
        }
    }
}
