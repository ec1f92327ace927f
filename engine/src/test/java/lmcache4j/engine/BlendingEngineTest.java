package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.key.SegmentTokenDatabase;
import lmcache4j.engine.key.TokenDatabase;

/**
 * One engine keying prefix requests by its own database and blended ones by segments beside them
 * ({@link LMCacheEngine#prepare(int[], boolean[], Map, TokenDatabase)} with
 * {@link SegmentTokenDatabase#besidePrefixes}): the same tokens stored both ways come back each as
 * their own KV, with no tag needed, and both kinds evict each other under one memory budget.
 */
class BlendingEngineTest {
    private static final int LAYERS = 3;
    private static final int HEADS = 2;
    private static final int HEAD = 16;
    private static final int CHUNK = 64;
    private static final int[] SEP = {35, 671, 35};
    private static final ModelMetadata MODEL = new ModelMetadata("blend/model", 1, 0, DType.FLOAT32, LAYERS, HEADS, HEAD, false);

    private static LMCacheEngine shared(double cpuGb) {
        return LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", cpuGb).set("hash_seed", "0").set("save_unfull_chunk", true).build(), MODEL,
                KvConnector.host(1), List.of());
    }

    /** The request keyed by segments beside the engine's prefix keys. */
    private static PreparedRequest bySegment(LMCacheEngine engine, int[] tokens) {
        TokenDatabase own = engine.tokenDatabase();
        return engine.prepare(tokens, null, Map.of(),
                SegmentTokenDatabase.besidePrefixes(SEP, own.hasher(), own.keyFactory(), own.storageKeys()));
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
    void theSameTokensStoredAsAPrefixAndAsASegmentComeBackEachAsItsOwnKv() {
        // A prompt of one chunk and no separator: its first prefix chunk and its only segment are
        // the same 64 tokens, which LMCache's own segment key would not tell apart (nor would a tag,
        // which a prefix request's configs can carry too).
        int[] prompt = text(new Random(2), CHUNK);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = shared(0.02)) {
            ExternalKvCacheTest.RowsKv asSegment = filled(arena, 256, 10);
            ExternalKvCacheTest.RowsKv asPrefix = filled(arena, 256, 20);
            PreparedRequest segments = bySegment(engine, prompt);
            PreparedRequest prefix = engine.prepare(prompt, Map.of());
            assertEquals(CHUNK, engine.store(segments, asSegment));
            assertEquals(0, engine.lookup(prefix), "a stored segment must not answer a prefix lookup");
            assertEquals(CHUNK, engine.store(prefix, asPrefix), "the prefix is stored beside the segment, not skipped");

            ExternalKvCacheTest.RowsKv out = new ExternalKvCacheTest.RowsKv(arena, 256);
            boolean[] loaded = engine.retrieve(engine.prepare(prompt, Map.of()), out, null);
            assertTrue(loaded[CHUNK - 1]);
            assertTrue(same(out, asPrefix, 0, CHUNK), "a prefix request got the segment's KV");
            loaded = engine.retrieve(bySegment(engine, prompt), out, null);
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
            PreparedRequest blended = bySegment(engine, join(text(random, 20), SEP, document));
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
                PreparedRequest docs = bySegment(engine, join(text(random, 200), SEP, text(random, 200)));
                assertEquals(400, engine.store(docs, kv));
            }
            assertEquals(0, engine.lookup(prefix), "the prefix chunks outlived a budget's worth of segments");
        }
    }
}
