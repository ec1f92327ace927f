package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.lookup.LookupClient;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.redis.RedisServerProcess;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * Closing an engine joins every thread it started: with its CPU, disk and remote tiers (fs:// and
 * redis://), a controller worker, KV events, the P2P tier's controller lookups, prefetches, a
 * layerwise retrieve and lookup pins in use, and a lookup client beside it, no thread of theirs
 * is alive the moment close returns, virtual ones included. Every thread they start is named
 * {@code lmcache4j-…}.
 */
@Timeout(120)
class EngineThreadsJoinedTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;
    private static final int TOKENS = 640;
    /** Shared by every engine of the process by design (docs/embedding.md): never stopped. */
    private static final List<String> SHARED = List.of("lmcache4j-hash-helper-", "lmcache4j-leak-detector");
    /**
     * The JDK's and Netty's process-wide threads, started on first use and kept for the JVM or ended
     * when idle: the virtual-thread scheduler and pollers, timers, Netty's global executor.
     */
    private static final List<String> PROCESS_WIDE = List.of("ForkJoinPool", "MasterPoller", "VirtualThread-unblocker",
            "Read-Poller", "Write-Poller", "CompletableFutureDelayScheduler", "process reaper", "globalEventExecutor");

    @TempDir
    Path dir;

    @Test
    void fsRemoteControllerEventsAndP2pEngines() throws Exception {
        try (FakeController controller = new FakeController();
                ZContext zmq = new OwnedZContext("test-engine-threads-joined", 1)) {
            // The subscriber binds a port the kernel picks and the engine connects: no port can be taken first.
            // (JeroMQ's ipc:// is a loopback TCP port derived from the name, and CI once found it taken.)
            ZMQ.Socket events = zmq.createSocket(SocketType.SUB);
            events.bind("tcp://127.0.0.1:*");
            String eventsEndpoint = events.getLastEndpoint(); // not a bind address, so the engine connects
            events.subscribe(new byte[0]); // a subscriber, so the publisher holds nothing back at close
            Set<Thread> before = liveThreads(); // the test's own controller and subscriber are running now
            String remote = "fs://" + dir.resolve("remote");
            LMCacheEngineConfig writerConfig = base(remote).set("local_disk", dir.resolve("disk").toString())
                    .set("max_local_disk_size", 0.01).set("enable_controller", true).set("lmcache_instance_id", "threads")
                    .set("controller_url", "127.0.0.1:" + controller.pullPort)
                    .set("controller_reply_url", "127.0.0.1:" + controller.replyPort)
                    .set("lmcache_worker_heartbeat_delay_time", 0.05).set("lmcache_worker_heartbeat_time", 0.1)
                    .set("kv_events_endpoint", eventsEndpoint)
                    .set("enable_p2p", true).set("p2p_host", "127.0.0.1").set("p2p_init_ports", List.of(freePort()))
                    .set("extra_config", Map.of("p2p_timeout_ms", 500, "p2p_token", "the-deployment-p2p-token")).build();
            Set<String> seen;
            try (Arena arena = Arena.ofShared();
                 LMCacheEngine writer = LMCacheEngine.create(writerConfig, SyntheticKv.model(), KvConnector.host(2), List.of());
                 LMCacheEngine reader = LMCacheEngine.create(base(remote).build(), SyntheticKv.model(), KvConnector.host(2),
                         List.of());
                 LMCacheEngine layered = LMCacheEngine.create(base().set("use_layerwise", true).build(), SyntheticKv.model(),
                         KvConnector.host(2), List.of());
                 LookupClient lookups = LookupClient.open(lookupConfig(), SyntheticKv.model())) {
                PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
                int[] tokens = storeAndReadBack(writer, kv, 1);
                assertTrue(heardWhileStoring(events, writer, kv), "the subscriber hears the writer's KV events");
                ((RemoteBackend) writer.storage().tier(RemoteBackend.NAME).orElseThrow()).awaitPuts();
                ((LocalDiskBackend) writer.storage().tier(LocalDiskBackend.NAME).orElseThrow()).awaitPuts();
                writer.lookup(writer.prepare(SyntheticKv.tokens(TOKENS, 99), Map.of()), "nowhere"); // asks the P2P tier
                PreparedRequest fromRemote = reader.prepare(tokens, Map.of());
                assertEquals(TOKENS, reader.prefetch(fromRemote, "r").get(10, TimeUnit.SECONDS), "prefetched from fs://");
                reader.retrieve(fromRemote, kv, SyntheticKv.slots(TOKENS, BLOCKS, 1), "r");
                assertTrue(lookups.lookupBlocking(tokens, "q", Map.of(), Duration.ofMillis(50)) >= 0);
                layerByLayer(layered, kv);
                seen = names(startedSince(before));
                // Gone before the engine closes: the worker's deregistration lingers half a second, and close waits for it.
                controller.close();
            }
            assertUsed(seen, "lmcache4j-disk-io-", "lmcache4j-remote-health", "lmcache4j-fs-io-",
                    "lmcache4j-controller-worker-", "lmcache4j-kv-events", "lmcache4j-lookup-client",
                    "lmcache4j-p2p-controller-lookup", "lmcache4j-layer-copy-", "lmcache4j-prefetch-expiry-");
            assertAllJoined(before);
        }
    }

    @Test
    void redisRemoteEngine() throws Exception {
        try (RedisServerProcess redis = RedisServerProcess.start()) {
            Set<Thread> before = liveThreads();
            Set<String> seen;
            try (Arena arena = Arena.ofShared();
                 LMCacheEngine engine = LMCacheEngine.create(base("redis://127.0.0.1:" + redis.port()).build(),
                         SyntheticKv.model(), KvConnector.host(2), List.of())) {
                PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
                PreparedRequest request = engine.prepare(storeAndReadBack(engine, kv, 2), Map.of());
                RemoteBackend remote = (RemoteBackend) engine.storage().tier(RemoteBackend.NAME).orElseThrow();
                remote.awaitPuts();
                engine.storage().cpu().clear(); // the prompt is remote only: the prefetch decodes what Redis sends
                assertEquals(TOKENS, engine.prefetch(request, "r").get(10, TimeUnit.SECONDS));
                engine.retrieve(request, kv, SyntheticKv.slots(TOKENS, BLOCKS, 2), "r");
                seen = names(startedSince(before));
            }
            assertUsed(seen, "lmcache4j-redis-nioEventLoop-", "lmcache4j-remote-health");
            assertAllJoined(before);
        }
    }

    private static ConfigLoader.Builder base(String remoteUrl) {
        return base().set("remote_url", remoteUrl);
    }

    private static ConfigLoader.Builder base() {
        double chunkGb = SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK).set("max_local_cpu_size", 32 * chunkGb)
                .set("hash_seed", "0");
    }

    private static LMCacheEngineConfig lookupConfig() throws Exception {
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK).set("hash_seed", "0")
                .set("lookup_scheduler_url", "tcp://127.0.0.1:" + freePort())
                .set("lookup_worker_urls", List.of("tcp://127.0.0.1:" + freePort())).build();
    }

    /**
     * Whether a message reaches {@code sub} within 20 s. Receiving is also what makes JeroMQ send the
     * subscription over a connection made since the socket was last used.
     */
    /**
     * Whether the subscriber hears the engine's events within 30 s, storing a fresh prompt (new
     * events) every 2 s it hears none: on a loaded machine its subscription can reach the publisher
     * after the first store's events went out (seen once in CI).
     */
    private static boolean heardWhileStoring(ZMQ.Socket sub, LMCacheEngine engine, PagedKvCache kv) {
        sub.setReceiveTimeOut(100);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long nextStore = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        for (long seed = 100; System.nanoTime() < deadline; ) {
            if (sub.recv() != null) {
                return true;
            }
            if (System.nanoTime() > nextStore) {
                int[] tokens = SyntheticKv.tokens(TOKENS, seed);
                long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, seed++);
                SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
                engine.store(tokens, null, kv, slots, Map.of());
                nextStore = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            }
        }
        return false;
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Stores a prompt, prefetches it and retrieves it (pinned); returns its tokens. */
    private static int[] storeAndReadBack(LMCacheEngine engine, PagedKvCache kv, long seed) throws Exception {
        int[] tokens = SyntheticKv.tokens(TOKENS, seed);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, seed);
        SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
        PreparedRequest request = engine.prepare(tokens, Map.of());
        assertEquals(TOKENS, engine.store(request, kv, slots));
        engine.prefetch(request, "p").get(10, TimeUnit.SECONDS);
        engine.retrieve(request, kv, slots, "p");
        engine.lookup(request, "l");
        engine.retrieve(request, kv, slots, "l");
        return tokens;
    }

    /** Stores a prompt and retrieves it layer by layer (on the layer-copy thread). */
    private static void layerByLayer(LMCacheEngine engine, PagedKvCache kv) {
        int[] tokens = SyntheticKv.tokens(TOKENS, 3);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, 3);
        try (LayerwiseStore store = engine.storeLayer(tokens, null, kv, slots, Map.of())) {
            for (int l = 0; l < store.layers(); l++) {
                SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
                store.layerReady();
            }
            assertEquals(TOKENS, store.finish());
        }
        assertEquals(TOKENS, engine.lookup(tokens, Map.of(), "lw"));
        try (LayerwiseRetrieve retrieve = engine.retrieveLayer(tokens, null, kv, slots, Map.of(), "lw")) {
            for (int l = 0; l < SyntheticKv.LAYERS; l++) {
                retrieve.awaitLayer();
            }
            retrieve.finish();
        }
    }

    private static Set<Thread> liveThreads() {
        Set<Thread> all = new HashSet<>(Thread.getAllStackTraces().keySet());
        all.addAll(OwnedThreads.running()); // the only listing with virtual threads in it
        return all;
    }

    /** Threads alive now that were not in {@code before}, the shared and the JDK's own aside. */
    private static Set<Thread> startedSince(Set<Thread> before) {
        return liveThreads().stream().filter(t -> t.isAlive() && !before.contains(t))
                .filter(t -> Stream.concat(SHARED.stream(), PROCESS_WIDE.stream()).noneMatch(t.getName()::startsWith))
                .collect(Collectors.toSet());
    }

    private static Set<String> names(Set<Thread> threads) {
        return threads.stream().map(t -> t.getName() + (t.isVirtual() ? " (virtual)" : ""))
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private static void assertUsed(Set<String> seen, String... prefixes) {
        Set<String> unnamed = seen.stream().filter(n -> !n.startsWith(OwnedThreads.PREFIX)).collect(Collectors.toSet());
        assertTrue(unnamed.isEmpty(), "every thread the engine starts is named lmcache4j-...: " + unnamed);
        for (String prefix : prefixes) {
            assertTrue(seen.stream().anyMatch(n -> n.startsWith(prefix)), "no " + prefix + " thread ran: " + seen);
        }
    }

    /** Right after close, with no grace period: a thread of ours still alive was not joined. */
    private static void assertAllJoined(Set<Thread> before) {
        Set<String> left = names(startedSince(before)).stream().filter(n -> n.startsWith(OwnedThreads.PREFIX))
                .collect(Collectors.toCollection(TreeSet::new));
        assertTrue(left.isEmpty(), "threads still alive after close: " + left);
    }
}
