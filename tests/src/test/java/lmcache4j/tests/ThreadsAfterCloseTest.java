package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.server.lm.LmCacheServer;

/**
 * Closing an engine (with CPU, disk and {@code lm://} tiers, after stores, lookups, prefetches and a
 * layerwise retrieve) and the {@code lm://} server it used leaves none of the threads they started
 * running: every thread is joined or ends by itself within seconds. The two shared, idle-parked
 * pools docs/embedding.md names as never stopped are the only exceptions. Every thread they start
 * is named {@code lmcache4j-…}, so a thread dump says whose it is.
 */
class ThreadsAfterCloseTest {
    /** Shared across engines by design (docs/embedding.md, "Threads, and how to stop them"). */
    private static final List<String> SHARED = List.of("lmcache4j-hash-helper-", "lmcache4j-leak-detector");
    /** The JDK's own: the virtual-thread scheduler and pollers, started on the first virtual thread, kept for the JVM. */
    private static final List<String> JDK = List.of("ForkJoinPool-1-worker-", "MasterPoller", "VirtualThread-unblocker",
            "Read-Poller", "Write-Poller");

    @TempDir
    Path disk;

    @Test
    void closingTheEngineAndTheServerLeavesNoThreadOfTheirsRunning() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        ModelMetadata model = new ModelMetadata("threads/model", 1, 0, DType.BFLOAT16, 2, 2, 64, false);
        try (LmCacheServer server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 64L << 20, Optional.empty(), 16 << 20);
             LMCacheEngine engine = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of())
                     .set("chunk_size", 256).set("max_local_cpu_size", 0.05).set("hash_seed", "0")
                     .set("local_disk", disk.toString()).set("max_local_disk_size", 0.05)
                     .set("remote_url", "lm://127.0.0.1:" + server.port()).build(), model, KvConnector.host(2), List.of());
             Arena arena = Arena.ofShared()) {
            List<MemorySegment> layers = new ArrayList<>();
            long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, 64, 16, 2, 64, DType.BFLOAT16);
            for (int l = 0; l < 2; l++) {
                layers.add(arena.allocate(bytes, 64));
            }
            PagedKvCache kv = new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, 64, 16, 2, 64, DType.BFLOAT16);
            long[] slots = new long[700];
            for (int t = 0; t < slots.length; t++) {
                slots[t] = t;
            }
            int[] tokens = new Random(1).ints(700, 0, 30_000).toArray();
            PreparedRequest request = engine.prepare(tokens, Map.of());
            assertEquals(512, engine.store(request, kv, slots));
            engine.prefetch(request, "p").get(10, TimeUnit.SECONDS);
            engine.lookup(request, "l");
            engine.retrieve(request, kv, slots, "l");
            engine.retrieve(request, kv, slots, "p");
            Set<String> unnamed = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> !before.contains(t) && JDK.stream().noneMatch(t.getName()::startsWith))
                    .map(Thread::getName).filter(n -> !n.startsWith("lmcache4j-"))
                    .collect(Collectors.toCollection(TreeSet::new));
            assertTrue(unnamed.isEmpty(), "every thread lmcache4j starts is named lmcache4j-...: " + unnamed);
            var layerwise = engine.retrieveLayer(request, kv, slots, "x");
            layerwise.awaitLayer();
            layerwise.awaitLayer();
            layerwise.finish();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Set<String> left;
        do {
            left = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> !before.contains(t) && t.isAlive())
                    .filter(t -> SHARED.stream().noneMatch(t.getName()::startsWith))
                    .filter(t -> JDK.stream().noneMatch(t.getName()::startsWith))
                    .map(t -> t.getName() + (t.isDaemon() ? " (daemon)" : ""))
                    .collect(Collectors.toCollection(TreeSet::new));
            if (left.isEmpty()) {
                break;
            }
            Thread.sleep(50);
        } while (System.nanoTime() < deadline);
        assertTrue(left.isEmpty(), "threads still running after close: " + left);
    }
}
