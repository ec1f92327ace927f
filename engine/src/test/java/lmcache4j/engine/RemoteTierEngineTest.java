package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.remote.RemoteBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two engines sharing an {@code fs://} or {@code redis://} remote tier, and a remote that
 * disappears and comes back ({@code lm://}, whose server is another module: TwoEnginesOverLmTest
 * in lmcache4j.server).
 */
class RemoteTierEngineTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;

    private static LMCacheEngine engine(String remoteUrl) {
        return engine(remoteUrl, "naive");
    }

    private static LMCacheEngine engine(String remoteUrl, String serde) {
        return engine(remoteUrl, serde, Map.of());
    }

    private static LMCacheEngine engine(String remoteUrl, String serde, Map<String, Object> extraConfig) {
        double chunkGb = SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        Map<String, Object> extra = new java.util.HashMap<>(Map.of("ping_interval", 0.05, "ping_timeout", 1));
        extra.putAll(extraConfig);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 8 * chunkGb).set("remote_url", remoteUrl).set("remote_serde", serde).set("hash_seed", "0")
                .set("blocking_timeout_secs", 2).set("extra_config", extra)
                .build();
        return LMCacheEngine.create(config, SyntheticKv.model(), KvConnector.host(), List.of());
    }

    private static RemoteBackend remote(LMCacheEngine engine) {
        return (RemoteBackend) engine.storage().tier(RemoteBackend.NAME).orElseThrow();
    }

    @Test
    void aSecondEngineHitsWhatTheFirstStoredInTheSharedRemote(@TempDir Path dir) throws Exception {
        String url = "fs://" + dir;
        int[] tokens = SyntheticKv.tokens(256, 31);
        long[] slots = SyntheticKv.slots(256, BLOCKS, 31);
        try (Arena arena = Arena.ofShared(); LMCacheEngine first = engine(url); LMCacheEngine second = engine(url)) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 256);
            assertEquals(256, first.store(tokens, null, kv, slots, Map.of()));
            remote(first).awaitPuts();
            assertEquals(4, remote(first).stats().puts());
            assertEquals(256, second.lookup(tokens, Map.of(), null), "the second engine finds the first's chunks remotely");
            PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
            long[] otherSlots = SyntheticKv.slots(256, BLOCKS, 32);
            boolean[] loaded = second.retrieve(tokens, null, target, otherSlots, Map.of(), null);
            assertTrue(loaded[255]);
            assertEquals(0, SyntheticKv.mismatches(target, tokens, otherSlots, 0, 256), "bytes read back from the remote");
            assertEquals(4, remote(second).stats().gets());
            assertEquals(4, second.storage().cpu().size(), "remote hits are written back into the CPU tier");
        }
    }

    @Test
    void lz4CompressedChunksRoundTripThroughAnFsRemote(@TempDir Path dir) throws Exception {
        String url = "fs://" + dir;
        int[] tokens = SyntheticKv.tokens(256, 41);
        long[] slots = SyntheticKv.slots(256, BLOCKS, 41);
        try (Arena arena = Arena.ofShared(); LMCacheEngine first = engine(url, "lz4"); LMCacheEngine second = engine(url, "lz4")) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 256);
            assertEquals(256, first.store(tokens, null, kv, slots, Map.of()));
            remote(first).awaitPuts();
            RemoteBackend.Stats put = remote(first).stats();
            assertEquals("lz4", put.serde());
            assertEquals(4, put.puts());
            assertTrue(put.rawBytes() > 0 && put.compressNanos() > 0);
            assertEquals(put.compressedBytes(), put.putBytes());
            assertEquals(256, second.lookup(tokens, Map.of(), null));
            PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
            long[] otherSlots = SyntheticKv.slots(256, BLOCKS, 42);
            boolean[] loaded = second.retrieve(tokens, null, target, otherSlots, Map.of(), null);
            assertTrue(loaded[255]);
            assertEquals(0, SyntheticKv.mismatches(target, tokens, otherSlots, 0, 256), "bytes decompressed from the remote");
            RemoteBackend.Stats got = remote(second).stats();
            assertEquals(4, got.gets());
            assertEquals(put.rawBytes(), got.decompressedBytes());
            assertEquals(0, got.corruptEntries());
            System.out.printf("lz4 over fs:// on SyntheticKv: %d -> %d bytes (ratio %.3f), compress %d us, decompress %d us%n",
                    put.rawBytes(), put.compressedBytes(), put.rawBytes() / (double) put.compressedBytes(),
                    put.compressNanos() / 1000, got.decompressNanos() / 1000);
        }
    }

    @Test
    void twoEnginesShareChunksThroughRedis() throws Exception {
        int[] tokens = SyntheticKv.tokens(192, 35);
        long[] slots = SyntheticKv.slots(192, BLOCKS, 35);
        try (var redis = lmcache4j.engine.remote.redis.RedisServerProcess.start()) {
            String url = redis.url();
            try (Arena arena = Arena.ofShared(); LMCacheEngine first = engine(url); LMCacheEngine second = engine(url)) {
                PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
                SyntheticKv.compute(kv, tokens, slots, 0, 192);
                first.store(tokens, null, kv, slots, Map.of());
                remote(first).awaitPuts();
                assertEquals(192, second.lookup(tokens, Map.of(), null));
                PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
                assertTrue(second.retrieve(tokens, null, target, slots, Map.of(), null)[191]);
                assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, 192));
            }
        }
    }

    @Test
    void extraConfigRedisLayoutSplitStoresManifestsAndPartsThatASecondEngineReads() throws Exception {
        int[] tokens = SyntheticKv.tokens(192, 36);
        long[] slots = SyntheticKv.slots(192, BLOCKS, 36);
        Map<String, Object> split = Map.of("redis_layout", "split", "redis_split_part_mb", 1, "redis_split_connections", 2);
        try (var redis = lmcache4j.engine.remote.redis.RedisServerProcess.start();
             var raw = io.lettuce.core.RedisClient.create(redis.url());
             var rawConnection = raw.connect()) {
            try (Arena arena = Arena.ofShared(); LMCacheEngine first = engine(redis.url(), "naive", split);
                 LMCacheEngine second = engine(redis.url(), "naive", split)) {
                PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
                SyntheticKv.compute(kv, tokens, slots, 0, 192);
                first.store(tokens, null, kv, slots, Map.of());
                remote(first).awaitPuts();
                List<String> keys = rawConnection.sync().keys("*");
                assertEquals(6, keys.size(), "a manifest and one part for each of 3 chunks: " + keys);
                assertEquals(3, keys.stream().filter(k -> k.endsWith("@l4js.m")).count(), keys.toString());
                assertEquals(192, second.lookup(tokens, Map.of(), null));
                PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
                assertTrue(second.retrieve(tokens, null, target, slots, Map.of(), null)[191]);
                assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, 192));
            }
        }
    }

    @Test
    void aRemoteThatDisappearsIsSwappedForABlackholeAndBackWithoutAnyCallerSeeingAnError(@TempDir Path root) throws Exception {
        Path dir = Files.createDirectories(root.resolve("shared"));
        int[] tokens = SyntheticKv.tokens(128, 33);
        long[] slots = SyntheticKv.slots(128, BLOCKS, 33);
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine("fs://" + dir)) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 128);
            Files.delete(dir); // the shared file system goes away
            awaitHealth(engine, false);
            assertEquals(128, engine.store(tokens, null, kv, slots, Map.of()), "stores keep working on the CPU tier");
            assertTrue(remote(engine).stats().droppedPuts() >= 2, "puts to the blackhole are dropped and counted");
            assertEquals(128, engine.lookup(tokens, Map.of(), null));
            Files.createDirectories(dir); // it comes back
            awaitHealth(engine, true);
            engine.storage().cpu().clear();
            int[] more = Arrays.copyOf(tokens, 128);
            assertEquals(128, engine.store(more, null, kv, slots, Map.of()), "stored again, now remotely too");
            remote(engine).awaitPuts();
            engine.storage().cpu().clear();
            assertEquals(128, engine.lookup(tokens, Map.of(), null), "remote hits resume");
            PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
            assertTrue(engine.retrieve(tokens, null, target, slots, Map.of(), null)[127]);
            assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, 128));
            assertFalse(remote(engine).stats().pingFailures() == 0);
        }
    }

    private static void awaitHealth(LMCacheEngine engine, boolean healthy) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (remote(engine).healthy() != healthy && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(healthy, remote(engine).healthy(), "health did not change within 10 s");
    }
}
