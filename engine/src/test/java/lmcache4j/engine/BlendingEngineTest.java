package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.ChunkedTokenDatabase;

/**
 * One engine for prefix-cache requests and blended requests ({@link LMCacheEngine#createBlending}):
 * the caller picks the keying per request, the two key spaces never meet (the same tokens stored
 * both ways come back each as their own KV), and both kinds live under one memory budget.
 */
class BlendingEngineTest {
    private static final int LAYERS = 3;
    private static final int HEADS = 2;
    private static final int HEAD = 16;
    private static final int CHUNK = 64;
    private static final int[] SEP = {35, 671, 35};
    private static final ModelMetadata MODEL = new ModelMetadata("blend/model", 1, 0, DType.FLOAT32, LAYERS, HEADS, HEAD, false);

    private static LMCacheEngineConfig config(double cpuGb, boolean blending) {
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK).set("max_local_cpu_size", cpuGb)
                .set("hash_seed", "0").set("enable_blending", blending).build();
    }

    private static LMCacheEngine shared(double cpuGb) {
        return LMCacheEngine.createBlending(config(cpuGb, true), MODEL, KvConnector.host(1), List.of(), SEP);
    }

    private static int[] text(Random random, int n) {
        return random.ints(n, 1_000, 30_000).toArray();
    }

    private static int[] join(int[]... parts) {
        return Arrays.stream(parts).flatMapToInt(Arrays::stream).toArray();
    }

    private static ExternalKvCacheTest.RowsKv filled(Arena arena, int capacity, long seed) {
        ExternalKvCacheTest.RowsKv kv = new ExternalKvCacheTest.RowsKv(arena, capacity);
        Random r = new Random(seed);
        for (MemorySegment[] plane : kv.planes) {
            for (MemorySegment s : plane) {
                for (long i = 0; i < s.byteSize(); i += 4) {
                    s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, i, r.nextFloat());
                }
            }
        }
        return kv;
    }

    /** Whether positions {@code [from, to)} of every layer and plane hold the same bytes in both. */
    private static boolean same(ExternalKvCacheTest.RowsKv a, ExternalKvCacheTest.RowsKv b, int from, int to) {
        long row = (long) HEADS * HEAD * Float.BYTES;
        for (int p = 0; p < 2; p++) {
            for (int l = 0; l < LAYERS; l++) {
                if (a.planes[p][l].asSlice(from * row, (to - from) * row)
                        .mismatch(b.planes[p][l].asSlice(from * row, (to - from) * row)) != -1) {
                    return false;
                }
            }
        }
        return true;
    }

    @Test
    void thePrefixOfAPromptHoldingTheSeparatorIsKeyedByChunksAndItsSegmentsOnlyWhenAsked() {
        Random random = new Random(1);
        int[] prompt = join(text(random, 100), SEP, text(random, 90));
        try (LMCacheEngine engine = shared(0.02)) {
            List<ChunkRange> prefix = engine.prepare(prompt, Map.of()).chunks();
            ChunkedTokenDatabase chunks = assertInstance(engine.tokenDatabase());
            assertEquals(chunks.processTokens(prompt), prefix, "prepare keys by the prefix chain, separator or not");
            assertEquals(List.of(0, 64, 128, 192), prefix.stream().map(ChunkRange::start).toList());
            List<ChunkRange> segments = engine.prepareSegments(prompt, Map.of()).chunks();
            assertEquals(List.of("0-100", "103-193"), segments.stream().map(r -> r.start() + "-" + r.end()).toList());
        }
    }

    private static ChunkedTokenDatabase assertInstance(Object database) {
        assertTrue(database instanceof ChunkedTokenDatabase, "prefix database: " + database);
        return (ChunkedTokenDatabase) database;
    }

    @Test
    void theSameTokensStoredAsAPrefixAndAsASegmentComeBackEachAsItsOwnKv() {
        // A prompt of one chunk and no separator: its first prefix chunk and its only segment are
        // the same 64 tokens, which LMCache's own segment key would not tell apart.
        int[] prompt = text(new Random(2), CHUNK);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = shared(0.02)) {
            ExternalKvCacheTest.RowsKv asSegment = filled(arena, 256, 10);
            ExternalKvCacheTest.RowsKv asPrefix = filled(arena, 256, 20);
            PreparedRequest segments = engine.prepareSegments(prompt, Map.of());
            PreparedRequest prefix = engine.prepare(prompt, Map.of());
            assertEquals(CHUNK, engine.store(segments, asSegment));
            assertEquals(0, engine.lookup(prefix), "a stored segment must not answer a prefix lookup");
            assertEquals(CHUNK, engine.store(prefix, asPrefix), "the prefix is stored beside the segment, not skipped");

            ExternalKvCacheTest.RowsKv out = new ExternalKvCacheTest.RowsKv(arena, 256);
            boolean[] loaded = engine.retrieve(engine.prepare(prompt, Map.of()), out, null);
            assertTrue(loaded[CHUNK - 1]);
            assertTrue(same(out, asPrefix, 0, CHUNK), "a prefix request got the segment's KV");
            loaded = engine.retrieve(engine.prepareSegments(prompt, Map.of()), out, null);
            assertTrue(loaded[CHUNK - 1]);
            assertTrue(same(out, asSegment, 0, CHUNK), "a blended request got the prefix's KV");
        }
    }

    @Test
    void prefixChunksAndSegmentsEvictEachOtherUnderOneBudget() {
        Random random = new Random(3);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = shared(0.002)) {
            long perToken = 2L * LAYERS * HEADS * HEAD * Float.BYTES;
            int fits = (int) (engine.storage().memoryCapacityBytes() / perToken);
            ExternalKvCacheTest.RowsKv kv = filled(arena, 2 * CHUNK * 4 + 8, 30);
            int[] document = text(random, 200);
            PreparedRequest blended = engine.prepareSegments(join(text(random, 20), SEP, document), Map.of());
            assertEquals(220, engine.store(blended, kv));
            assertEquals(223, engine.lookup(blended), "the end of the last cached segment");
            // Prefix requests of twice the budget: the segments, least recently used, go first.
            for (int stored = 0; stored < 2 * fits; stored += 4 * CHUNK) {
                int[] prompt = text(random, 4 * CHUNK);
                assertEquals(4 * CHUNK, engine.store(engine.prepare(prompt, Map.of()), kv));
            }
            assertEquals(0, engine.lookup(blended), "the segments outlived a budget's worth of prefix chunks");
            int[] last = text(random, 4 * CHUNK);
            PreparedRequest prefix = engine.prepare(last, Map.of());
            engine.store(prefix, kv);
            assertEquals(4 * CHUNK, engine.lookup(prefix));
            for (int stored = 0; stored < 2 * fits; stored += 2 * 200) {
                PreparedRequest docs = engine.prepareSegments(join(text(random, 200), SEP, text(random, 200)), Map.of());
                assertEquals(400, engine.store(docs, kv));
            }
            assertEquals(0, engine.lookup(prefix), "the prefix chunks outlived a budget's worth of segments");
        }
    }

    @Test
    void anEngineWithoutSegmentsAndABadSharedEngineAreRefusedSayingWhatToDo() {
        try (LMCacheEngine prefixOnly = LMCacheEngine.create(config(0.02, false), MODEL, KvConnector.host(1), List.of())) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> prefixOnly.prepareSegments(new int[] {1, 2}, Map.of()));
            assertTrue(e.getMessage().contains("createBlending"), e.getMessage());
            assertTrue(prefixOnly.segmentDatabase().isEmpty());
        }
        IllegalArgumentException noBlending = assertThrows(IllegalArgumentException.class,
                () -> LMCacheEngine.createBlending(config(0.02, false), MODEL, KvConnector.host(1), List.of(), SEP));
        assertTrue(noBlending.getMessage().contains("enable_blending"), noBlending.getMessage());
        IllegalArgumentException noSeparator = assertThrows(IllegalArgumentException.class,
                () -> LMCacheEngine.createBlending(config(0.02, true), MODEL, KvConnector.host(1), List.of(), new int[0]));
        assertTrue(noSeparator.getMessage().contains("blend_special_str"), noSeparator.getMessage());
        IllegalArgumentException create = assertThrows(IllegalArgumentException.class,
                () -> LMCacheEngine.create(config(0.02, true), MODEL, KvConnector.host(1), List.of()));
        assertTrue(create.getMessage().contains("createBlending"), create.getMessage());
    }

    @Test
    void aSegmentRequestsMaskLeavesOutTheSegmentsBeforeIt() {
        Random random = new Random(4);
        int[] prompt = join(text(random, 30), SEP, text(random, 40), SEP, text(random, 50));
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = shared(0.02)) {
            boolean[] mask = new boolean[prompt.length];
            Arrays.fill(mask, 33, prompt.length, true);
            PreparedRequest masked = engine.prepareSegments(prompt, mask, Map.of());
            assertEquals(List.of(33, 76), masked.chunksToProcess().stream().map(ChunkRange::start).toList());
            assertEquals(90, engine.store(masked, filled(arena, 256, 5)));
            assertThrows(IllegalArgumentException.class, () -> engine.prepareSegments(prompt, new boolean[3], Map.of()));
        }
    }
}
