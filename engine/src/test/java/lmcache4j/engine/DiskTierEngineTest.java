package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.storage.disk.ChunkFileEdits;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The engine with a disk tier: spills past the CPU tier, reads back exact bytes, survives a restart;
 * chunk files corrupted or forged on disk are misses that lookup does not promise (or, when they go
 * bad after lookup, counted corrupt reads), and a directory the tier does not own is refused.
 */
class DiskTierEngineTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;

    private static LMCacheEngine engine(Path dir) {
        return engine(dir, 64, Map.of());
    }

    private static LMCacheEngine engine(Path dir, int diskChunks, Map<String, Object> extraConfig) {
        return engine(dir, diskChunks, extraConfig, "lmcache");
    }

    private static LMCacheEngine engine(Path dir, int diskChunks, Map<String, Object> extraConfig, String storageKeys) {
        double chunkGb = SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        double fileGb = (SyntheticKv.model().chunkBytes(CHUNK) + 4096) / (double) (1L << 30);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 2 * chunkGb).set("local_disk", dir.toString())
                .set("max_local_disk_size", diskChunks * fileGb).set("hash_seed", "0")
                .set("storage_chunk_keys", storageKeys).set("extra_config", extraConfig).build();
        return LMCacheEngine.create(config, SyntheticKv.model(), KvConnector.host(), List.of());
    }

    private static LocalDiskBackend disk(LMCacheEngine engine) {
        return (LocalDiskBackend) engine.storage().tier(LocalDiskBackend.NAME).orElseThrow();
    }

    /** Stores {@code tokens} chunk by chunk (a growing conversation), so every chunk reaches the disk. */
    private static void storeAll(LMCacheEngine engine, int[] tokens, PagedKvCache kv, long[] slots) throws InterruptedException {
        for (int end = CHUNK; end <= tokens.length; end += CHUNK) {
            engine.store(java.util.Arrays.copyOf(tokens, end), null, kv, slots, Map.of());
            awaitDisk(engine);
        }
    }

    /** Tokens loaded: the mask must be a prefix of trues. */
    private static int loadedPrefix(boolean[] loaded) {
        int n = 0;
        while (n < loaded.length && loaded[n]) {
            n++;
        }
        for (int i = n; i < loaded.length; i++) {
            assertFalse(loaded[i], "loaded past a hole at token " + n);
        }
        return n;
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

    /**
     * A disk directory written in the older digest form survives the switch to LMCache's current keys:
     * the restarted tier recovers every file (none is counted corrupt or deleted), the new form's keys
     * miss them, and storage_chunk_keys: digest finds every chunk again with the same bytes.
     */
    @Test
    void digestFormFilesAreRecoveredUnderTheNewFormAndHitAgainWithTheDigestSetting(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(256, 23); // 4 chunks
        long[] slots = SyntheticKv.slots(256, BLOCKS, 23);
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 256);
            try (LMCacheEngine old = engine(dir, 64, Map.of(), "digest")) {
                storeAll(old, tokens, kv, slots);
            }
            try (LMCacheEngine current = engine(dir, 64, Map.of(), "lmcache")) {
                LocalDiskBackend tier = disk(current);
                tier.awaitVerification();
                assertEquals(4, tier.recovery().chunks().size(), "every digest-form file is recovered");
                assertEquals(0, tier.recovery().removedCorrupt(), "none is taken for corrupt");
                assertEquals(0, current.lookup(tokens, Map.of(), null), "the current form's keys name other files");
                storeAll(current, tokens, kv, slots);
            }
            try (LMCacheEngine back = engine(dir, 64, Map.of(), "digest")) {
                disk(back).awaitVerification();
                assertEquals(8, disk(back).recovery().chunks().size(), "both forms' files side by side");
                assertEquals(256, back.lookup(tokens, Map.of(), null), "the digest setting finds the old files");
                PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
                assertTrue(allTrue(back.retrieve(tokens, null, target, slots, Map.of(), null)));
                assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, 256));
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

    @Test
    void aChunkCorruptedWhileTheEngineWasDownIsNotPromisedByLookup(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(512, 23);
        long[] slots = SyntheticKv.slots(512, BLOCKS, 23);
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 512);
            try (LMCacheEngine engine = engine(dir)) {
                storeAll(engine, tokens, kv, slots);
            }
            List<Path> files = ChunkFileEdits.chunkFiles(dir);
            assertEquals(8, files.size());
            ChunkFileEdits.flipPayloadByte(files.get(3), 100); // not a byte of KV is wrong in any other file
            try (LMCacheEngine restarted = engine(dir)) { // the start checks every recovered payload
                assertEquals(1, disk(restarted).stats().corruptOnVerify());
                assertFalse(Files.exists(files.get(3)), "the corrupt file is the cache's: removed");
                int promised = restarted.lookup(tokens, Map.of(), null);
                assertTrue(promised < 512, "lookup promised the corrupt chunk: " + promised);
                PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
                int loaded = loadedPrefix(restarted.retrieve(tokens, null, target, slots, Map.of(), null));
                assertEquals(promised, loaded, "retrieve kept lookup's promise");
                assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, loaded));
            }
        }
    }

    @Test
    void withTheCheckInTheBackgroundRecoveredChunksAreOfferedOnceVerified(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(512, 27);
        long[] slots = SyntheticKv.slots(512, BLOCKS, 27);
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 512);
            try (LMCacheEngine engine = engine(dir)) {
                storeAll(engine, tokens, kv, slots);
            }
            ChunkFileEdits.flipPayloadByte(ChunkFileEdits.chunkFiles(dir).get(6), 1);
            try (LMCacheEngine restarted = engine(dir, 64, Map.of("local_disk.verify_in_background", true))) {
                int early = restarted.lookup(tokens, Map.of(), null); // whatever has been checked so far
                PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
                int loaded = loadedPrefix(restarted.retrieve(tokens, null, target, slots, Map.of(), null));
                assertTrue(loaded >= early, "a retrieve never falls short of the lookup: " + early + " > " + loaded);
                disk(restarted).awaitVerification();
                var progress = disk(restarted).verification();
                assertTrue(progress.done() && progress.corrupt() == 1, progress.toString());
                int promised = restarted.lookup(tokens, Map.of(), null);
                assertTrue(promised < 512);
                target = SyntheticKv.cache(arena, BLOCKS);
                assertEquals(promised, loadedPrefix(restarted.retrieve(tokens, null, target, slots, Map.of(), null)));
                assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, promised));
            }
        }
    }

    @Test
    void aForgedHeaderFoundAtRestartIsAMissNotAnException(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(512, 24);
        long[] slots = SyntheticKv.slots(512, BLOCKS, 24);
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 512);
            try (LMCacheEngine engine = engine(dir)) {
                storeAll(engine, tokens, kv, slots);
            }
            for (Path file : ChunkFileEdits.chunkFiles(dir)) { // every chunk claims half its tokens, header CRC valid
                ChunkFileEdits.forgeShape(file, ChunkFileEdits.rawHeader(file).shape().withDim(2, CHUNK / 2));
            }
            try (LMCacheEngine restarted = engine(dir)) {
                assertEquals(8, disk(restarted).recovery().removedCorrupt());
                assertEquals(0, restarted.lookup(tokens, Map.of(), null));
                PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
                assertEquals(0, loadedPrefix(restarted.retrieve(tokens, null, target, slots, Map.of(), null)));
                assertEquals(List.of(), ChunkFileEdits.chunkFiles(dir), "the forgeries carry the cache's magic: removed");
            }
        }
    }

    @Test
    void aChunkThatGoesBadWhileServingIsACountedCorruptMissNotWrongKv(@TempDir Path dir) throws Exception {
        int[] tokens = SyntheticKv.tokens(512, 25);
        long[] slots = SyntheticKv.slots(512, BLOCKS, 25);
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine(dir)) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 512);
            storeAll(engine, tokens, kv, slots);
            engine.storage().cpu().clear(); // every chunk comes from disk
            assertEquals(512, engine.lookup(tokens, Map.of(), "req"));
            List<Path> files = ChunkFileEdits.chunkFiles(dir);
            ChunkFileEdits.flipPayloadByte(files.get(5), 7);

            PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
            int loaded = loadedPrefix(engine.retrieve(tokens, null, target, slots, Map.of(), "req"));
            assertTrue(loaded < 512, "the bad chunk was not served");
            assertEquals(0, SyntheticKv.mismatches(target, tokens, slots, 0, loaded), "and no byte served was wrong");
            assertEquals(1, disk(engine).stats().corruptReads(), "the short retrieve is explained by a counted corrupt chunk");
            assertFalse(Files.exists(files.get(5)));
            assertEquals(loaded, engine.lookup(tokens, Map.of(), null), "the next lookup promises what is there");
        }
    }

    @Test
    void aNonEmptyDirectoryIsRefusedUnlessClaimedAndItsFilesSurvive(@TempDir Path dir) throws Exception {
        Path thesis = Files.writeString(dir.resolve("thesis.txt"), "four years of work");
        Path data = Files.write(dir.resolve("data.bin"), new byte[] {1, 2, 3});
        RuntimeException refused = assertThrows(RuntimeException.class, () -> engine(dir).close());
        assertTrue(refused.getMessage().contains("local_disk.claim_nonempty_dir"), refused.getMessage());

        int[] tokens = SyntheticKv.tokens(512, 26);
        long[] slots = SyntheticKv.slots(512, BLOCKS, 26);
        try (Arena arena = Arena.ofShared();
             LMCacheEngine engine = engine(dir, 4, Map.of("local_disk.claim_nonempty_dir", true))) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            SyntheticKv.compute(kv, tokens, slots, 0, 512);
            storeAll(engine, tokens, kv, slots); // 8 chunks through a 4-chunk disk tier: evictions
            assertTrue(disk(engine).stats().evictions() > 0);
            engine.clear();
        }
        try (LMCacheEngine again = engine(dir)) { // claimed now: no knob needed
            assertEquals(0, again.lookup(tokens, Map.of(), null));
        }
        assertEquals("four years of work", Files.readString(thesis));
        assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(data));
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
