package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.logging.Level;

import lmcache4j.allocator.AllocatorStats;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.engine.storage.CpuTier;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The engine with its CPU, disk and remote ({@code lm://}, an in-process server) tiers under a seeded
 * random mix of requests whose prompts share prefixes ({@link SoakWorkload}), with faults injected at
 * random ({@link SoakFaults}: the server killed and restarted empty, chunk files flipped or cut
 * short, allocation bursts, the CPU tier flushed), for {@code lmcache4j.soak.seconds} (20 in CI, set
 * in the parent pom; a long run: {@code ./lmcache4j test -pl tests -am -Dtest=SoakTest
 * -Dsurefire.failIfNoSpecifiedTests=false -Dlmcache4j.soak.seconds=600}). Every retrieve is checked
 * as it returns ({@link SoakRun}: a prefix, no hole, every byte the KV of its prefix). At the end,
 * with the faults healed: remote writes resume, no pin is left, the CPU allocator holds exactly the
 * cached chunks, the tiers stay within their sizes, heap, direct memory, threads and file
 * descriptors have not grown, and closing the engine finds no leaked object. Progress goes to
 * stdout every five seconds.
 */
class SoakTest {
    private static final int CHUNK_TOKENS = 64;
    private static final int BLOCK_SIZE = 16;
    private static final int MAX_PROMPT_TOKENS = 12 * CHUNK_TOKENS;
    private static final int CPU_CHUNKS = 48;
    private static final int DISK_CHUNKS = 96;
    private static final int REMOTE_CHUNKS = 384;
    /** Operations before the first fault; the resource baseline is measured there. */
    private static final int WARMUP_OPS = 300;
    /** Operations after the faults are healed, to see remote writes resume. */
    private static final int RECOVERY_OPS = 100;
    private static final long PROGRESS_NANOS = 5_000_000_000L;
    private static final ModelMetadata MODEL = new ModelMetadata("soak/model", 1, 0, DType.BFLOAT16, 2, 4, 32, false);

    @Test
    void theEngineServesExactKvThroughRandomFaultsAndEndsWithNothingLeakedOrGrown(@TempDir Path tmp) throws Exception {
        long seconds = Long.getLong("lmcache4j.soak.seconds", 20);
        long seed = Long.getLong("lmcache4j.soak.seed", 20251123L);
        System.out.printf(Locale.ROOT, "soak: %d s, seed %d (-Dlmcache4j.soak.seconds=N, -Dlmcache4j.soak.seed=S)%n", seconds, seed);
        long chunkBytes = MODEL.chunkBytes(CHUNK_TOKENS);
        Path diskDir = tmp.resolve("disk");
        try (EngineLogCounter logs = EngineLogCounter.install();
             RestartableLmServer server = new RestartableLmServer(REMOTE_CHUNKS * chunkBytes, 16 << 20);
             Arena arena = Arena.ofShared()) {
            LMCacheEngine engine = LMCacheEngine.create(config(server, diskDir, chunkBytes), MODEL, KvConnector.host(), List.of());
            PagedKvCache kv = pagedCache(arena);
            SoakWorkload workload = new SoakWorkload(seed, MAX_PROMPT_TOKENS);
            SoakFaults faults = new SoakFaults(workload.random(), WARMUP_OPS, server, diskDir, engine.storage().cpu(),
                    new SoakFaults.Chunk(KvConnector.chunkShape(kv, CHUNK_TOKENS), DType.BFLOAT16, KvConnector.chunkFormat(kv)),
                    CPU_CHUNKS / 2);
            SoakRun run = new SoakRun(engine, kv, workload, faults, seed);
            Throwable failed = null;
            try {
                soak(seconds, run, faults, engine, server, logs);
            } catch (Throwable t) {
                failed = t;
                throw t;
            } finally {
                faults.close();
                if (failed != null) {
                    closeAfterFailure(engine, failed);
                }
            }
            assertDoesNotThrow(engine::close, "closing the engine checks its allocator for leaked objects");
        }
    }

    private static void soak(long seconds, SoakRun run, SoakFaults faults, LMCacheEngine engine, RestartableLmServer server,
                             EngineLogCounter logs) throws Exception {
        RemoteBackend remote = (RemoteBackend) engine.storage().tier(RemoteBackend.NAME).orElseThrow();
        LocalDiskBackend disk = (LocalDiskBackend) engine.storage().tier(LocalDiskBackend.NAME).orElseThrow();
        long started = System.nanoTime();
        long deadline = started + seconds * 1_000_000_000L;
        long nextProgress = started + PROGRESS_NANOS;
        ResourceGauges baseline = null;
        long op = 0;
        while (op < WARMUP_OPS || System.nanoTime() < deadline) {
            if (op == WARMUP_OPS) {
                disk.awaitPuts();
                remote.awaitPuts();
                baseline = ResourceGauges.measure();
                System.out.println("soak: baseline after " + WARMUP_OPS + " operations: " + baseline);
            }
            run.runOne(op);
            faults.afterOp(op);
            op++;
            if (System.nanoTime() >= nextProgress) {
                progress(started, seconds, run, faults, engine, remote, disk, logs);
                nextProgress += PROGRESS_NANOS;
            }
        }
        long faultsInjected = faults.total();
        faults.heal();
        awaitHealthy(remote);
        long putsBefore = remote.stats().puts();
        for (int i = 0; i < RECOVERY_OPS; i++) {
            run.runOne(op++);
        }
        disk.awaitPuts();
        remote.awaitPuts();
        progress(started, seconds, run, faults, engine, remote, disk, logs);
        System.out.printf(Locale.ROOT, "soak: done: %,d operations and %d faults in %.1f s%n", run.tally.ops, faultsInjected,
                (System.nanoTime() - started) / 1e9);

        assertTrue(faultsInjected > 0 || seconds < 5, "a soak of " + seconds + " s injected no fault");
        assertTrue(run.tally.retrievedTokens > 0, "nothing was ever retrieved: the soak tested nothing");
        assertTrue(remote.stats().puts() > putsBefore, "remote writes resume once the server is back: " + remote.stats());
        assertEquals(0, engine.health(), "the allocator's invariants hold");
        checkCpuTierHoldsOnlyItsChunks(engine.storage().cpu(), MODEL.chunkBytes(CHUNK_TOKENS));
        LocalDiskBackend.Stats d = disk.stats();
        assertTrue(d.usedBytes() <= d.capacityBytes(), "the disk tier stays within its size: " + d);
        checkServerWithinItsSize(server);
        ResourceGauges end = ResourceGauges.measure();
        System.out.println("soak: at the end: " + end + " (baseline " + baseline + ")");
        assertTrue(end.heapBytes() <= baseline.heapBytes() + (64L << 20), "live heap grew: " + baseline + " -> " + end);
        assertTrue(end.directBytes() <= baseline.directBytes() + (16L << 20), "direct buffers grew: " + baseline + " -> " + end);
        assertTrue(end.threads() <= baseline.threads() + 8, "threads grew: " + baseline + " -> " + end);
        assertTrue(end.fileDescriptors() <= baseline.fileDescriptors() + 16, "open files grew: " + baseline + " -> " + end);
        assertEquals(0, logs.count(Level.SEVERE), "the engine logged an error; the last warning: " + logs.lastWarning());
    }

    /** No pin outlived its request, and the allocator's live objects and used bytes are exactly the cached chunks. */
    private static void checkCpuTierHoldsOnlyItsChunks(CpuTier cpu, long chunkBytes) {
        AllocatorStats st = cpu.allocator().stats();
        long alignment = TensorMemoryAllocator.DEFAULT_ALIGNMENT;
        long slotBytes = (chunkBytes + alignment - 1) / alignment * alignment;
        assertEquals(0, st.pinnedObjects(), "a pin outlived its request: " + st);
        assertEquals(cpu.size(), st.liveObjects(), "objects alive beyond the cached chunks: " + st);
        assertEquals(cpu.size() * slotBytes, st.usedBytes(), "used bytes beyond the cached chunks': " + st);
    }

    private static void checkServerWithinItsSize(RestartableLmServer server) {
        LmCacheServer.Stats st = server.stats().orElseThrow(() -> new AssertionError("the lm:// server is down at the end"));
        long pool = (server.maxBytes() + 4095) / 4096 * 4096;
        assertTrue(st.poolUsedBytes() <= pool, "the lm:// server holds more than its " + pool + " bytes: " + st);
    }

    private static void progress(long started, long seconds, SoakRun run, SoakFaults faults, LMCacheEngine engine,
                                 RemoteBackend remote, LocalDiskBackend disk, EngineLogCounter logs) {
        SoakRun.Tally t = run.tally;
        LocalDiskBackend.Stats d = disk.stats();
        RemoteBackend.Stats r = remote.stats();
        System.out.printf(Locale.ROOT, "soak %5.1f/%d s: %,d ops (%,d retrieves, %.1f MB verified, lookup hit %.0f%%, "
                        + "%d short, %d memory timeouts) | faults %d: %s | cpu %d chunks, %d evictions | disk %d chunks, "
                        + "%d reads, %d corrupt, %d io failures | remote %s, %d puts, %d gets, %d dropped | %,d warnings%n",
                (System.nanoTime() - started) / 1e9, seconds, t.ops, t.retrieves, t.verifiedBytes / 1e6,
                t.promptTokens == 0 ? 0.0 : 100.0 * t.lookupHitTokens / t.promptTokens, t.shortRetrieves, t.memoryTimeouts,
                faults.total(), faults.summary(), engine.storage().cpu().size(), engine.storage().cpu().evictions(),
                d.chunks(), d.reads(), d.corruptReads(), d.ioFailures(), r.healthy() ? "up" : "down", r.puts(), r.gets(),
                r.droppedPuts() + r.failedPuts(), logs.count(Level.WARNING));
    }

    private static LMCacheEngineConfig config(RestartableLmServer server, Path diskDir, long chunkBytes) {
        double gib = 1L << 30;
        return ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", CHUNK_TOKENS)
                .set("max_local_cpu_size", CPU_CHUNKS * chunkBytes / gib)
                .set("local_disk", diskDir.toString())
                .set("max_local_disk_size", DISK_CHUNKS * (chunkBytes + 4096) / gib)
                .set("remote_url", server.url(500))
                .set("blocking_timeout_secs", 5)
                .set("hash_seed", "0")
                .set("extra_config", Map.of("use_odirect", true, "ping_interval", 0.05, "ping_timeout", 1))
                .build();
    }

    /** Room for the longest prompt one and a half times over, so block tables scatter. */
    private static PagedKvCache pagedCache(Arena arena) {
        int blocks = MAX_PROMPT_TOKENS / BLOCK_SIZE * 3 / 2;
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, blocks, BLOCK_SIZE, MODEL.numKvHeads(),
                MODEL.headSize(), MODEL.kvDtype());
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < MODEL.numLayers(); l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, blocks, BLOCK_SIZE, MODEL.numKvHeads(), MODEL.headSize(),
                MODEL.kvDtype());
    }

    private static void awaitHealthy(RemoteBackend remote) throws InterruptedException {
        long deadline = System.nanoTime() + 15_000_000_000L;
        while (!remote.healthy() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(remote.healthy(), "the remote tier is not healthy 15 s after its server came back: " + remote.stats());
    }

    /** Closes the engine after a failure without hiding it: a leak found then is added to it. */
    private static void closeAfterFailure(LMCacheEngine engine, Throwable failure) {
        try {
            engine.close();
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }
}
