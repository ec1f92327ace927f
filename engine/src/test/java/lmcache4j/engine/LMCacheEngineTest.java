package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.metrics.MetricsSnapshot;
import org.junit.jupiter.api.Test;

class LMCacheEngineTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;

    /** An engine whose CPU tier holds {@code chunks} full chunks. */
    private static LMCacheEngine engine(int chunks) {
        double gb = chunks * SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", CHUNK).set("max_local_cpu_size", gb).set("hash_seed", "0").build();
        return LMCacheEngine.create(config, SyntheticKv.model(), KvConnector.host(), List.of());
    }

    @Test
    void storeThenLookupThenRetrieveGivesBackExactlyTheComputedKv() {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine(16)) {
            PagedKvCache first = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(200, 1);
            long[] slots = SyntheticKv.slots(200, BLOCKS, 1);
            SyntheticKv.compute(first, tokens, slots, 0, 200);
            assertEquals(192, engine.store(tokens, null, first, slots, Map.of()), "3 full chunks; the partial tail is not saved");
            assertEquals(192, engine.lookup(tokens, Map.of(), null));

            PagedKvCache second = SyntheticKv.cache(arena, BLOCKS);
            long[] otherSlots = SyntheticKv.slots(200, BLOCKS, 2);
            assertEquals(192, engine.lookup(tokens, Map.of(), "req-1"));
            boolean[] loaded = engine.retrieve(tokens, null, second, otherSlots, Map.of(), "req-1");
            for (int t = 0; t < 200; t++) {
                assertEquals(t < 192, loaded[t], "token " + t);
            }
            assertEquals(0, SyntheticKv.mismatches(second, tokens, otherSlots, 0, 192), "every retrieved element is right");
            var stats = engine.storage().cpu().allocator().stats();
            assertEquals(0, stats.pinnedObjects(), "the retrieve released the lookup's pins");
            assertEquals(engine.storage().cpu().size(), stats.liveObjects(), "only the cache holds references");
            MetricsSnapshot m = engine.metrics().snapshot();
            assertEquals(192, m.hitTokens());
            assertEquals(192, m.storedTokens());
            assertEquals(2L * 2 * 192 * 16 * 2, m.retrievedBytes(), "bytes actually copied: 2 layers × K/V × tokens × hidden × 2 bytes");
        }
    }

    @Test
    void aRetrieveLoadsOnlyThePrefixAndTheMaskSkipsWhatTheEngineHas() {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine(16)) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(256, 3);
            long[] slots = SyntheticKv.slots(256, BLOCKS, 3);
            SyntheticKv.compute(kv, tokens, slots, 0, 256);
            engine.store(java.util.Arrays.copyOf(tokens, 128), null, kv, slots, Map.of());
            assertEquals(128, engine.lookup(tokens, Map.of(), null));
            boolean[] mask = new boolean[256];
            java.util.Arrays.fill(mask, 64, 256, true); // the engine has the first chunk already
            PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
            boolean[] loaded = engine.retrieve(tokens, mask, target, slots, Map.of(), null);
            for (int t = 0; t < 256; t++) {
                assertEquals(t >= 64 && t < 128, loaded[t], "token " + t);
            }
            assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 64, 128));
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> {
                boolean[] ragged = new boolean[256];
                java.util.Arrays.fill(ragged, 10, 256, true); // 10 Falses: not a multiple of the chunk size
                engine.retrieve(tokens, ragged, target, slots, Map.of(), null);
            });
            assertTrue(bad.getMessage().toLowerCase().contains("mask"), bad.getMessage());
        }
    }

    @Test
    void aStoreThatRunsOutOfMemoryKeepsThePrefix() {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine(3)) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(192, 4);
            long[] slots = SyntheticKv.slots(192, BLOCKS, 4);
            SyntheticKv.compute(kv, tokens, slots, 0, 192);
            engine.store(tokens, null, kv, slots, Map.of());
            assertEquals(192, engine.lookup(tokens, Map.of(), "pin-all")); // pins all three: nothing evictable
            int[] other = SyntheticKv.tokens(192, 5);
            SyntheticKv.compute(kv, other, slots, 0, 192);
            assertEquals(0, engine.store(other, null, kv, slots, Map.of()), "no memory and nothing evictable: nothing stored");
            engine.lookupUnpin("pin-all");
            assertEquals(192, engine.store(other, null, kv, slots, Map.of()), "unpinned chunks are evicted for the new ones");
            assertEquals(0, engine.lookup(tokens, Map.of(), null), "the first request's prefix was evicted");
            assertTrue(engine.metrics().snapshot().localCpuEvictions() >= 3);
        }
    }

    @Test
    void aLookupWhoseRetrieveNeverComesIsUnpinnedAfterPinTimeoutSec() throws InterruptedException {
        double gb = 3 * SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", gb).set("hash_seed", "0").set("pin_timeout_sec", 1)
                .set("pin_check_interval_sec", 1).build();
        try (Arena arena = Arena.ofConfined();
             LMCacheEngine engine = LMCacheEngine.create(config, SyntheticKv.model(), KvConnector.host(), List.of())) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(192, 4);
            long[] slots = SyntheticKv.slots(192, BLOCKS, 4);
            SyntheticKv.compute(kv, tokens, slots, 0, 192);
            engine.store(tokens, null, kv, slots, Map.of());
            assertEquals(192, engine.lookup(tokens, Map.of(), "forgotten")); // pins all three, never retrieved
            assertEquals(192, engine.lookup(tokens, Map.of(), "answered")); // a second pin on the same chunks...
            engine.lookupUnpin("answered"); // ...released properly
            int[] other = SyntheticKv.tokens(192, 5);
            SyntheticKv.compute(kv, other, slots, 0, 192);
            assertEquals(0, engine.store(other, null, kv, slots, Map.of()), "pinned: nothing evictable yet");
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (engine.expiredLookupPins() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertEquals(1, engine.expiredLookupPins(), "the forgotten lookup's pins were released, and only those");
            assertEquals(0, engine.storage().cpu().allocator().stats().pinnedObjects());
            assertEquals(192, engine.store(other, null, kv, slots, Map.of()), "its chunks are evictable again");
            engine.lookupUnpin("forgotten"); // late: nothing left to release, and no double unpin
            assertEquals(0, engine.storage().cpu().allocator().stats().pinnedObjects());
        }
    }

    @Test
    void badInputIsRefusedBeforeAnythingIsStoredOrWritten() {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine(4)) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(128, 6);
            long[] slots = SyntheticKv.slots(128, BLOCKS, 6);
            assertThrows(IllegalArgumentException.class, () -> engine.store(tokens, new boolean[5], kv, slots, Map.of()));
            assertThrows(IllegalArgumentException.class, () -> engine.store(tokens, null, kv, new long[100], Map.of()));
            PagedKvCache wrongDtype = new PagedKvCache(kv.layers(), kv.layout(), kv.numBlocks(), kv.blockSize(), kv.numKvHeads(),
                    kv.headSize(), lmcache4j.allocator.DType.BFLOAT16);
            assertThrows(IllegalArgumentException.class, () -> engine.store(tokens, null, wrongDtype, slots, Map.of()));
            long[] unmapped = slots.clone();
            unmapped[70] = -1;
            assertThrows(IllegalArgumentException.class, () -> engine.store(tokens, null, kv, unmapped, Map.of()));
            assertEquals(0, engine.lookup(tokens, Map.of(), null), "a refused store stores nothing");
            assertEquals(0, engine.storage().cpu().allocator().stats().liveObjects(), "and leaks nothing");
        }
        LMCacheEngine closed = engine(2);
        closed.close();
        assertThrows(EngineClosedException.class, () -> closed.lookup(new int[64], Map.of(), null));
    }

    @Test
    void tagsSeparateKeysAndClearEmptiesTheCache() {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine(8)) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(128, 7);
            long[] slots = SyntheticKv.slots(128, BLOCKS, 7);
            SyntheticKv.compute(kv, tokens, slots, 0, 128);
            engine.store(tokens, null, kv, slots, Map.of("lmcache.tag.tenant", "a"));
            assertEquals(128, engine.lookup(tokens, Map.of("lmcache.tag.tenant", "a"), null));
            assertEquals(0, engine.lookup(tokens, Map.of("lmcache.tag.tenant", "b"), null));
            assertEquals(0, engine.lookup(tokens, Map.of(), null));
            assertEquals(128, engine.clear());
            assertEquals(0, engine.lookup(tokens, Map.of("lmcache.tag.tenant", "a"), null));
            assertEquals(0, engine.health());
            assertTrue(engine.metrics().toPrometheus().contains("lmcache:num_lookup_requests"));
            assertFalse(engine.metrics().snapshot().storedTokens() == 0);
        }
    }
}
