package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.disk.LocalDiskBackend;

/**
 * The prefetch across every tier (CPU, disk, an fs:// remote, and a slow or failing tier below
 * them) and the lifecycle of what it holds. Every test ends by closing the engine, whose allocator
 * fails, listing them, if any object is still referenced: each test proves its path leaks nothing.
 */
class PrefetchAcrossTiersTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;
    private static final int TOKENS = 6 * CHUNK;

    private static LMCacheEngine engine(Path dir, List<StorageBackend> extra, Map<String, Object> settings) {
        double chunkGb = SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        double fileGb = (SyntheticKv.model().chunkBytes(CHUNK) + 4096) / (double) (1L << 30);
        ConfigLoader.Builder b = ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 16 * chunkGb).set("hash_seed", "0").set("enable_async_loading", true)
                .set("blocking_timeout_secs", 5);
        if (dir != null) {
            b.set("local_disk", dir.resolve("disk").toString()).set("max_local_disk_size", 32 * fileGb)
                    .set("remote_url", "fs://" + dir.resolve("remote"));
        }
        settings.forEach(b::set);
        LMCacheEngineConfig config = b.build();
        LMCacheEngine engine = LMCacheEngine.create(config, SyntheticKv.model(), KvConnector.host(), extra);
        for (StorageBackend tier : extra) {
            if (tier instanceof GatedTier gated) {
                gated.useMemory(engine.storage());
            }
        }
        return engine;
    }

    private static List<CacheEngineKey> keys(LMCacheEngine engine, int[] tokens) {
        return engine.prepare(tokens, Map.of()).chunks().stream().map(ChunkRange::key).toList();
    }

    private static void awaitLowerTiers(LMCacheEngine engine) throws InterruptedException {
        ((LocalDiskBackend) engine.storage().tier(LocalDiskBackend.NAME).orElseThrow()).awaitPuts();
        ((RemoteBackend) engine.storage().tier(RemoteBackend.NAME).orElseThrow()).awaitPuts();
    }

    private static void removeFrom(LMCacheEngine engine, String tier, CacheEngineKey key) {
        assertTrue(engine.storage().tier(tier).orElseThrow().remove(key), tier + " held " + key);
    }

    private static boolean allTrue(boolean[] mask) {
        for (boolean b : mask) {
            if (!b) {
                return false;
            }
        }
        return true;
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
            Thread.sleep(10);
        }
    }

    @Test
    void eachChunkComesFromTheHighestTierThatHoldsItAndTheRetrieveConsumesThem(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(TOKENS, 31);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, 31);
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
            try (LMCacheEngine engine = engine(dir, List.of(), Map.of())) {
                engine.store(tokens, null, kv, slots, Map.of());
                awaitLowerTiers(engine);
                List<CacheEngineKey> keys = keys(engine, tokens);
                String cpu = engine.storage().cpu().name();
                // chunks 0-1 stay in memory, 2-3 only on disk, 4-5 only in the remote store
                for (int i = 2; i < 6; i++) {
                    removeFrom(engine, cpu, keys.get(i));
                }
                removeFrom(engine, LocalDiskBackend.NAME, keys.get(4));
                removeFrom(engine, LocalDiskBackend.NAME, keys.get(5));

                assertEquals(TOKENS, engine.prefetch(tokens, Map.of(), "req").get(10, TimeUnit.SECONDS));
                assertEquals(6, engine.storage().cpu().size(), "the prefix is in the CPU tier now");
                assertEquals(0, engine.storage().cpu().clear(), "held for the request: nothing is evictable");
                PrefetchStats held = engine.prefetchStats();
                assertEquals(6, held.readyChunks());
                assertEquals(4, held.lowerTierChunks(), "two from disk, two from the remote store");

                PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
                assertTrue(allTrue(engine.retrieve(tokens, null, target, slots, Map.of(), "req")));
                assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, TOKENS));
                PrefetchStats done = engine.prefetchStats();
                assertEquals(6, done.retrievedChunks(), "the retrieve took every chunk from the prefetch");
                assertEquals(1, done.consumed());
                assertEquals(0, done.held());
                assertEquals(TOKENS, engine.storage().cpu().clear(), "consumed: evictable again");
            }
        }
    }

    @Test
    void theFirstChunkNoTierHoldsEndsThePrefixAndNothingPastItIsKept(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(TOKENS, 32);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, 32);
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine(dir, List.of(), Map.of())) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
            engine.store(tokens, null, kv, slots, Map.of());
            awaitLowerTiers(engine);
            List<CacheEngineKey> keys = keys(engine, tokens);
            engine.storage().cpu().clear();
            assertEquals(1, engine.storage().remove(keys.get(3)) > 0 ? 1 : 0);
            assertEquals(3 * CHUNK, engine.prefetch(tokens, Map.of(), "gap").get(10, TimeUnit.SECONDS));
            assertEquals(3, engine.storage().cpu().size(), "chunks past the hole were not brought up");
            engine.releasePrefetch("gap");
            assertEquals(1, engine.prefetchStats().cancelled());
        }
    }

    @Test
    void aPrefetchNoRetrieveConsumesIsReleasedAfterPinTimeoutSec(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(TOKENS, 33);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, 33);
        try (Arena arena = Arena.ofShared();
             LMCacheEngine engine = engine(dir, List.of(), Map.of("pin_timeout_sec", 1))) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
            engine.store(tokens, null, kv, slots, Map.of());
            awaitLowerTiers(engine);
            engine.storage().cpu().clear();
            assertEquals(TOKENS, engine.prefetch(tokens, Map.of(), "never-retrieved").get(10, TimeUnit.SECONDS));
            assertEquals(0, engine.storage().cpu().clear(), "held while the request may still come");
            awaitTrue(() -> engine.prefetchStats().expired() == 1, "the prefetch expired");
            assertEquals(0, engine.prefetchStats().held());
            assertEquals(TOKENS, engine.storage().cpu().clear(), "released: evictable again");
            assertEquals(0, engine.storage().cpu().allocator().stats().liveObjects());
        }
    }

    /** Asynchronous lookups that no retrieve follows: at most max_pending_prefetches are held, the rest miss. */
    @Test
    void prefetchesBeyondMaxPendingPrefetchesAreRefusedAsMisses(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(TOKENS, 37);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, 37);
        try (Arena arena = Arena.ofShared();
             LMCacheEngine engine = engine(dir, List.of(), Map.of("max_pending_prefetches", 3))) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
            engine.store(tokens, null, kv, slots, Map.of());
            for (int i = 0; i < 3; i++) {
                assertEquals(TOKENS, engine.prefetch(tokens, Map.of(), "r" + i).get(10, TimeUnit.SECONDS));
            }
            for (int i = 3; i < 1_000; i++) {
                assertEquals(0, engine.prefetch(tokens, Map.of(), "r" + i).get(10, TimeUnit.SECONDS), "refused: a miss");
            }
            assertEquals(TOKENS, engine.prefetch(tokens, Map.of(), "r1").get(10, TimeUnit.SECONDS),
                    "a request that holds one may replace it");
            PrefetchStats stats = engine.prefetchStats();
            assertEquals(3, stats.held());
            assertEquals(997, stats.refused());
            engine.releasePrefetch("r0");
            assertEquals(TOKENS, engine.prefetch(tokens, Map.of(), "r1000").get(10, TimeUnit.SECONDS), "room again");
            for (String id : List.of("r1", "r2", "r1000")) {
                engine.releasePrefetch(id);
            }
            assertEquals(0, engine.prefetchStats().held());
        }
    }

    @Test
    void aRequestCancelledWhileItsPrefetchIsLoadingDropsWhatArrivesLater() throws Exception {
        GatedTier slow = new GatedTier();
        int[] tokens = SyntheticKv.tokens(TOKENS, 34);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, 34);
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine(null, List.of(slow), Map.of())) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
            engine.store(tokens, null, kv, slots, Map.of());
            engine.storage().cpu().clear();
            CompletableFuture<Integer> loading = engine.prefetch(tokens, Map.of(), "cancelled");
            awaitTrue(() -> slow.loadsStarted() == 6, "every load started");
            engine.releasePrefetch("cancelled");
            slow.open();
            assertEquals(TOKENS, loading.get(10, TimeUnit.SECONDS), "the loads finished after the cancel");
            assertEquals(0, engine.prefetchStats().held());
            assertEquals(TOKENS, engine.storage().cpu().clear(), "what arrived was written back but not held");
        }
    }

    @Test
    void aTierFailingMidPrefetchEndsThePrefixThereAndReleasesTheLoadsPastIt() throws Exception {
        GatedTier failing = new GatedTier();
        int[] tokens = SyntheticKv.tokens(TOKENS, 35);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, 35);
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine(null, List.of(failing), Map.of())) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
            engine.store(tokens, null, kv, slots, Map.of());
            List<CacheEngineKey> keys = keys(engine, tokens);
            engine.storage().cpu().clear();
            failing.failOn(keys.get(2));
            failing.open();
            assertEquals(2 * CHUNK, engine.prefetch(tokens, Map.of(), "broken").get(10, TimeUnit.SECONDS));
            assertEquals(2, engine.storage().cpu().size(), "only the chunks before the failure were kept");
            PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
            boolean[] loaded = engine.retrieve(tokens, null, target, slots, Map.of(), "broken");
            assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, 2 * CHUNK));
            assertTrue(loaded[2 * CHUNK - 1]);
            assertEquals(2, engine.prefetchStats().retrievedChunks());
        }
    }

    @Test
    void closingTheEngineWithPrefetchesInFlightLeaksNothing() throws Exception {
        GatedTier slow = new GatedTier();
        int[] tokens = SyntheticKv.tokens(TOKENS, 36);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, 36);
        CompletableFuture<Integer> loading;
        LMCacheEngine engine = engine(null, List.of(slow), Map.of());
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
            engine.store(tokens, null, kv, slots, Map.of());
            engine.storage().cpu().clear();
            loading = engine.prefetch(tokens, Map.of(), "in-flight");
            awaitTrue(() -> slow.loadsStarted() == 6, "every load started");
            Thread opener = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(300); // the close is waiting for the loads by then
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                slow.open();
            });
            engine.close(); // the allocator's leak check passes: the late objects were dropped
            opener.join();
        }
        assertTrue(loading.isDone());
        assertEquals(0, slow.size(), "the tier was closed after the loads came back");
        assertThrows(EngineClosedException.class, () -> engine.prefetch(tokens, Map.of(), "late"));
    }

    @Test
    void aSlowTierNeverDelaysTheRetrieveOfARequestThatNeedsNoIo() throws Exception {
        GatedTier slow = new GatedTier();
        int[] cold = SyntheticKv.tokens(TOKENS, 37);
        int[] hot = SyntheticKv.tokens(2 * CHUNK, 38);
        long[] coldSlots = SyntheticKv.slots(TOKENS, BLOCKS, 37);
        long[] hotSlots = SyntheticKv.slots(2 * CHUNK, BLOCKS, 38);
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine(null, List.of(slow), Map.of())) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, cold, coldSlots, 0, TOKENS);
            engine.store(cold, null, kv, coldSlots, Map.of());
            engine.storage().cpu().clear(); // the cold request now lives only in the slow tier
            PagedKvCache hotKv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(hotKv, hot, hotSlots, 0, 2 * CHUNK);
            engine.store(hot, null, hotKv, hotSlots, Map.of());

            CompletableFuture<Integer> coldPrefetch = engine.prefetch(cold, Map.of(), "cold");
            awaitTrue(() -> slow.loadsStarted() == 6, "the cold prefetch is stuck in the slow tier");
            // The hot request is answered and retrieved in full while the slow tier holds every cold load.
            assertEquals(2 * CHUNK, engine.asyncLookupAndPrefetch("hot", folds(engine, hot), chunkTokens(2),
                    Map.of()).get(10, TimeUnit.SECONDS));
            PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
            assertTrue(allTrue(engine.retrieve(hot, null, target, hotSlots, Map.of(), "hot")));
            assertEquals(0, SyntheticKv.mismatches(target, hot, hotSlots, 0, 2 * CHUNK));
            assertFalse(coldPrefetch.isDone(), "the cold prefetch was still waiting on the slow tier all along");

            slow.open();
            assertEquals(TOKENS, coldPrefetch.get(10, TimeUnit.SECONDS));
            PagedKvCache coldTarget = SyntheticKv.cache(arena, BLOCKS);
            assertTrue(allTrue(engine.retrieve(cold, null, coldTarget, coldSlots, Map.of(), "cold")));
            assertEquals(0, SyntheticKv.mismatches(coldTarget, cold, coldSlots, 0, TOKENS));
        }
    }

    @Test
    void anAsyncLookupResolvesFoldedHashesAndStopsAtOneItNeverHashed(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(TOKENS, 39);
        long[] slots = SyntheticKv.slots(TOKENS, BLOCKS, 39);
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine(dir, List.of(), Map.of())) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
            engine.store(tokens, null, kv, slots, Map.of());
            awaitLowerTiers(engine);
            long[] folds = folds(engine, tokens);
            folds[4] ^= 1; // a chunk this engine never hashed
            assertEquals(4 * CHUNK, engine.asyncLookupAndPrefetch("a", folds, chunkTokens(6), Map.of())
                    .get(10, TimeUnit.SECONDS));
            assertThrows(IllegalArgumentException.class,
                    () -> engine.asyncLookupAndPrefetch("b", folds, chunkTokens(5), Map.of()));
            engine.releasePrefetch("a");
        }
        try (LMCacheEngine plain = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", CHUNK).set("max_local_cpu_size", 0.01).set("hash_seed", "0").build(),
                SyntheticKv.model(), KvConnector.host(), List.of())) {
            IllegalStateException off = assertThrows(IllegalStateException.class,
                    () -> plain.asyncLookupAndPrefetch("x", new long[0], new int[0], Map.of()));
            assertTrue(off.getMessage().contains("enable_async_loading"), off.getMessage());
        }
    }

    private static long[] folds(LMCacheEngine engine, int[] tokens) {
        return ControllerKeys.of(ControllerKeys.Scheme.LMCACHE, ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0"), tokens,
                engine.prepare(tokens, Map.of()).chunks());
    }

    private static int[] chunkTokens(int chunks) {
        int[] n = new int[chunks];
        java.util.Arrays.fill(n, CHUNK);
        return n;
    }
}
