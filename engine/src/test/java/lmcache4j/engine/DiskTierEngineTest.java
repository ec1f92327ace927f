package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The engine with a disk tier: spills past the CPU tier, reads back exact bytes, survives a restart. */
class DiskTierEngineTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;

    private static LMCacheEngine engine(Path dir) {
        double chunkGb = SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 2 * chunkGb).set("local_disk", dir.toString())
                .set("max_local_disk_size", 64 * chunkGb).set("hash_seed", "0").build();
        return LMCacheEngine.create(config, SyntheticKv.model(), KvConnector.host(), List.of());
    }

    private static void awaitDisk(LMCacheEngine engine) throws InterruptedException {
        ((LocalDiskBackend) engine.storage().tier(LocalDiskBackend.NAME).orElseThrow()).awaitPuts();
    }

    @Test
    void aRequestLongerThanTheCpuTierComesBackFromDiskAndAfterARestart(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(512, 21); // 8 chunks, the CPU tier holds 2
        long[] slots = SyntheticKv.slots(512, BLOCKS, 21);
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 512);
            try (LMCacheEngine engine = engine(dir)) {
                for (int end = CHUNK; end <= 512; end += CHUNK) { // a growing conversation, chunk by chunk
                    engine.store(java.util.Arrays.copyOf(tokens, end), null, kv, slots, Map.of());
                    awaitDisk(engine);
                }
                assertEquals(512, engine.lookup(tokens, Map.of(), null));
                PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
                boolean[] loaded = engine.retrieve(tokens, null, target, slots, Map.of(), null);
                assertTrue(allTrue(loaded));
                assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, 512));
            }
            try (LMCacheEngine restarted = engine(dir)) {
                assertEquals(512, restarted.lookup(tokens, Map.of(), null), "the disk tier kept every chunk");
                PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
                boolean[] loaded = restarted.retrieve(tokens, null, target, slots, Map.of(), "after-restart");
                assertTrue(allTrue(loaded));
                assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, 512));
                var stats = restarted.storage().cpu().allocator().stats();
                assertEquals(restarted.storage().cpu().size(), stats.liveObjects(), "no reference leaked");
                String text = restarted.metrics().toPrometheus();
                assertTrue(text.contains("lmcache:local_disk_read_count{model_name=\"synthetic/model\",worker_id=\"0\"} "), text);
                assertTrue(restarted.metrics().snapshot().tierReadings().get("lmcache:local_storage_usage") > 0);
            }
        }
    }

    @Test
    void prefetchLoadsTheDiskPrefixIntoTheCpuTierAndHoldsItUntilTheRetrieve(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(128, 22); // 2 chunks: the whole CPU tier
        long[] slots = SyntheticKv.slots(128, BLOCKS, 22);
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine(dir)) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 128);
            engine.store(tokens, null, kv, slots, Map.of());
            awaitDisk(engine);
            assertEquals(128, engine.storage().cpu().clear(), "the CPU tier drops both chunks; the disk keeps them");
            assertEquals(128, engine.prefetch(tokens, Map.of(), "req").get(10, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(2, engine.storage().cpu().size(), "the prefix is in the CPU tier now");
            assertEquals(0, engine.storage().cpu().clear(), "and held for the request: not evictable");
            PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
            assertTrue(allTrue(engine.retrieve(tokens, null, target, slots, Map.of(), "req")));
            assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, 128));
            var stats = engine.storage().cpu().allocator().stats();
            assertEquals(engine.storage().cpu().size(), stats.liveObjects(), "the retrieve released the prefetch");
            // A request cleaned up without a retrieve releases what its prefetch loaded.
            engine.storage().cpu().clear();
            assertEquals(128, engine.prefetch(tokens, Map.of(), "abandoned").get(10, java.util.concurrent.TimeUnit.SECONDS));
            engine.releasePrefetch("abandoned");
            assertEquals(128, engine.storage().cpu().clear(), "released: evictable again");
            assertEquals(0, engine.storage().cpu().allocator().stats().liveObjects());
        }
    }

    private static boolean allTrue(boolean[] mask) {
        for (boolean b : mask) {
            if (!b) {
                return false;
            }
        }
        return true;
    }
}
