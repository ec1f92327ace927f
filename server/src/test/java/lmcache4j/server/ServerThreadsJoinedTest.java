package lmcache4j.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.lookup.LookupClient;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.lm.LmConnector;
import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerServer;
import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.server.lm.LmChunkStore;
import lmcache4j.server.lm.LmServerLimits;
import lmcache4j.server.lookup.LookupServer;

/**
 * Closing a lookup server, a controller and an {@code lm://} server joins every thread each
 * started: with an engine that stores through the {@code lm://} server, reports to the controller
 * (whose HTTP API forwards a command back to it) and answers a scheduler's lookups, each
 * component's threads, virtual ones included, are gone the moment its close returns. Every
 * thread they start is named {@code lmcache4j-…}.
 */
@Timeout(120)
class ServerThreadsJoinedTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;
    private static final int BLOCK = 16;
    private static final int TOKENS = 640;
    private static final ModelMetadata MODEL = new ModelMetadata("threads/model", 1, 0, DType.FLOAT16, 2, 2, 8, false);
    /** Shared by every engine of the process by design (docs/embedding.md): never stopped. */
    private static final List<String> SHARED = List.of("lmcache4j-hash-helper-", "lmcache4j-leak-detector");
    /**
     * The JDK's: its process-wide threads, started on first use and kept for the JVM (virtual-thread
     * scheduler and pollers, timers), and its HTTP server's dispatcher and timers, which the JDK
     * names and its stop ends.
     */
    private static final List<String> JDK = List.of("ForkJoinPool", "MasterPoller", "VirtualThread-unblocker",
            "Read-Poller", "Write-Poller", "CompletableFutureDelayScheduler", "HTTP-Dispatcher", "idle-timeout-task",
            "req-rsp-timeout-task");

    @Test
    void eachServerJoinsItsThreadsOnClose() throws Exception {
        Set<Thread> before = liveThreads();
        try (LmCacheServer lm = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 64L << 20, Optional.empty(), 16 << 20);
             ControllerServer controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts());
             Arena arena = Arena.ofShared()) {
            LMCacheEngineConfig config = config(lm, controller);
            try (LMCacheEngine engine = LMCacheEngine.create(config, MODEL, KvConnector.host(2), List.of());
                 LookupServer lookups = LookupServer.start(engine);
                 LookupClient client = LookupClient.open(config, MODEL)) {
                int[] tokens = new Random(7).ints(TOKENS, 0, 30_000).toArray();
                long[] slots = new long[TOKENS];
                for (int t = 0; t < TOKENS; t++) {
                    slots[t] = t;
                }
                assertEquals(TOKENS, engine.store(tokens, null, cache(arena), slots, Map.of()));
                ((RemoteBackend) engine.storage().tier(RemoteBackend.NAME).orElseThrow()).awaitPuts();
                awaitRegistration(engine);
                assertEquals(TOKENS, client.lookupBlocking(tokens, "q", Map.of(), Duration.ofSeconds(10)));
                String http = controller.httpEndpoint().connectable().toString();
                assertTrue(request(http, "GET", "/metrics", "").startsWith("HTTP/1.1 200"));
                String cleared = request(http, "POST", "/clear", "{\"instance_id\": \"threads\", \"location\": \"LocalCPUBackend\"}");
                assertTrue(cleared.startsWith("HTTP/1.1 200"), "the controller forwards a clear to the worker: " + cleared);
                Set<String> seen = names(startedSince(before, OwnedThreads.PREFIX));
                Set<String> unnamed = names(startedSince(before, "")).stream()
                        .filter(n -> !n.startsWith(OwnedThreads.PREFIX)).collect(Collectors.toSet());
                assertTrue(unnamed.isEmpty(), "every thread the servers start is named lmcache4j-...: " + unnamed);
                for (String prefix : List.of("lmcache4j-lm-server-accept-", "lmcache4j-lm-server-reaper-",
                        "lmcache4j-lm-server-conn-", "lmcache4j-controller-ingest", "lmcache4j-controller-zmq-",
                        "lmcache4j-lookup-server", "lmcache4j-lookup-answers", "lmcache4j-lookup-server-zmq-")) {
                    assertTrue(seen.stream().anyMatch(n -> n.startsWith(prefix)), "no " + prefix + " thread ran: " + seen);
                }

                client.close();
                assertJoined(before, "lmcache4j-lookup-client");
                lookups.close();
                assertJoined(before, "lmcache4j-lookup-server", "lmcache4j-lookup-answers");
            }
            controller.close();
            assertJoined(before, "lmcache4j-controller-");
            lm.close();
            assertJoined(before, "lmcache4j-lm-server-");
        }
        assertJoined(before, OwnedThreads.PREFIX);
    }

    @Test
    void anLmServerWaitsForAConnectionStillInItsStore() throws Exception {
        Set<Thread> before = liveThreads();
        CountDownLatch entered = new CountDownLatch(1);
        try (LmCacheServer lm = LmCacheServer.startOver(InetAddress.getLoopbackAddress(), 0, new SlowStore(entered),
                Optional.empty(), 1 << 20, LmServerLimits.defaults());
             LmConnector client = LmConnector.connect(URI.create("lm://127.0.0.1:" + lm.port()))) {
            client.exists(new CacheEngineKey("threads/model", 1, 0, ChunkHash.of(new byte[] {1}), DType.FLOAT16));
            assertTrue(entered.await(10, TimeUnit.SECONDS), "the request reached the store");
            lm.close(); // its handler is still answering: close waits for it
            assertJoined(before, "lmcache4j-lm-server-");
        }
        assertJoined(before, OwnedThreads.PREFIX);
    }

    /** A store whose {@code exists} takes half a second, as a slow one would; it holds nothing. */
    private record SlowStore(CountDownLatch entered) implements LmChunkStore {
        @Override
        public boolean exists(String key) {
            entered.countDown();
            long until = System.nanoTime() + Duration.ofMillis(500).toNanos();
            while (System.nanoTime() < until) {
                LockSupport.parkNanos(until - System.nanoTime());
            }
            return false;
        }

        @Override
        public Optional<Lease> lease(String key) {
            return Optional.empty();
        }

        @Override
        public boolean put(String key, byte[] metadata, int length, PayloadSource source) throws IOException {
            source.skip(length);
            return false;
        }

        @Override
        public boolean remove(String key) {
            return false;
        }

        @Override
        public Occupancy occupancy() {
            return new Occupancy(0, 0, 0, 0, 0);
        }

        @Override
        public void close() {
        }
    }

    private static LMCacheEngineConfig config(LmCacheServer lm, ControllerServer controller) throws IOException {
        double chunkGb = MODEL.chunkBytes(CHUNK) / (double) (1L << 30);
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK).set("max_local_cpu_size", 32 * chunkGb)
                .set("hash_seed", "0").set("remote_url", "lm://127.0.0.1:" + lm.port())
                .set("enable_controller", true).set("lmcache_instance_id", "threads")
                .set("controller_pull_url", "127.0.0.1:" + controller.pullEndpoint().port())
                .set("controller_reply_url", "127.0.0.1:" + controller.replyEndpoint().port())
                .set("enable_async_loading", true)
                .set("lookup_scheduler_url", "tcp://127.0.0.1:" + freePort())
                .set("lookup_worker_urls", List.of("tcp://127.0.0.1:" + freePort())).set("lookup_timeout_ms", 10_000).build();
    }

    private static PagedKvCache cache(Arena arena) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, 2, 8, DType.FLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < 2; l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, 2, 8, DType.FLOAT16);
    }

    private static void awaitRegistration(LMCacheEngine engine) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!engine.controllerWorker().orElseThrow().registered()) {
            assertTrue(System.nanoTime() < deadline, "the worker never registered");
            Thread.sleep(10);
        }
    }

    /** One request over a plain socket (no client library, so no client threads); the whole response. */
    private static String request(String hostPort, String method, String path, String body) throws IOException {
        String[] at = hostPort.split(":");
        byte[] payload = body.getBytes(StandardCharsets.UTF_8);
        try (Socket s = new Socket(at[0], Integer.parseInt(at[1]))) {
            s.setSoTimeout(20_000);
            OutputStream out = s.getOutputStream();
            out.write((method + " " + path + " HTTP/1.1\r\nHost: " + hostPort + "\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + payload.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(payload);
            out.flush();
            InputStream in = s.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static Set<Thread> liveThreads() {
        Set<Thread> all = new HashSet<>(Thread.getAllStackTraces().keySet());
        all.addAll(OwnedThreads.running()); // the only listing with virtual threads in it
        return all;
    }

    /** Threads alive now, named {@code prefix…}, that were not in {@code before}; the shared and the JDK's own aside. */
    private static Set<Thread> startedSince(Set<Thread> before, String prefix) {
        return liveThreads().stream().filter(t -> t.isAlive() && !before.contains(t) && t.getName().startsWith(prefix))
                .filter(t -> Stream.concat(SHARED.stream(), JDK.stream()).noneMatch(t.getName()::startsWith))
                .collect(Collectors.toSet());
    }

    private static Set<String> names(Set<Thread> threads) {
        return threads.stream().map(t -> t.getName() + (t.isVirtual() ? " (virtual)" : ""))
                .collect(Collectors.toCollection(TreeSet::new));
    }

    /** Right after a close, with no grace period: a thread of its own still alive was not joined. */
    private static void assertJoined(Set<Thread> before, String... prefixes) {
        for (String prefix : prefixes) {
            Set<String> left = names(startedSince(before, prefix));
            assertTrue(left.isEmpty(), "threads still alive after close: " + left);
        }
    }
}
