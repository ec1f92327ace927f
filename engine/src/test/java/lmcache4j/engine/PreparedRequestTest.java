package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.key.KeyFactory;
import lmcache4j.engine.key.SegmentTokenDatabase;
import lmcache4j.engine.key.TokenDatabase;
import org.junit.jupiter.api.Test;

/** A request prepared once is hashed once, and behaves as the token-array calls do. */
class PreparedRequestTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;

    private static LMCacheEngine engine() {
        double gb = 16 * SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", CHUNK).set("max_local_cpu_size", gb).set("hash_seed", "0").build();
        return LMCacheEngine.create(config, SyntheticKv.model(), KvConnector.host(), List.of());
    }

    @Test
    void aPreparedRequestHashesItsTokensOnceForLookupRetrieveAndStore() {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(200, 1);
            long[] slots = SyntheticKv.slots(200, BLOCKS, 1);
            SyntheticKv.compute(kv, tokens, slots, 0, 200);

            PreparedRequest request = engine.prepare(tokens, Map.of());
            assertEquals(0, engine.lookup(request, "req-1"));
            engine.retrieve(request, kv, slots, "req-1");
            assertEquals(192, engine.store(request, kv, slots));
            assertEquals(192, engine.lookup(request));
            assertEquals(200, engine.metrics().hashedTokens(), "one hash of the 200 tokens for four calls");

            engine.lookup(tokens, Map.of(), null);
            engine.retrieve(tokens, null, kv, slots, Map.of(), null);
            engine.store(tokens, null, kv, slots, Map.of());
            assertEquals(200 + 3 * 200, engine.metrics().hashedTokens(), "the token-array calls hash once each");
            assertTrue(engine.metrics().toPrometheus().contains("lmcache:num_hashed_tokens{"));
        }
    }

    @Test
    void preparedAndTokenArrayCallsGiveTheSameAnswers() {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(256, 3);
            long[] slots = SyntheticKv.slots(256, BLOCKS, 3);
            SyntheticKv.compute(kv, tokens, slots, 0, 256);
            engine.store(engine.prepare(Arrays.copyOf(tokens, 128), Map.of()), kv, slots);

            boolean[] mask = new boolean[256];
            Arrays.fill(mask, 64, 256, true); // the caller has the first chunk already
            PreparedRequest masked = engine.prepare(tokens, mask, Map.of());
            assertEquals(64, masked.skippedTokens());
            assertEquals(4, masked.chunks().size());
            assertEquals(3, masked.chunksToProcess().size());
            assertEquals(engine.lookup(tokens, Map.of(), null), engine.lookup(masked), "a lookup sees every chunk");

            PagedKvCache viaTokens = SyntheticKv.cache(arena, BLOCKS);
            PagedKvCache viaPrepared = SyntheticKv.cache(arena, BLOCKS);
            boolean[] expected = engine.retrieve(tokens, mask, viaTokens, slots, Map.of(), null);
            boolean[] loaded = engine.retrieve(masked, viaPrepared, slots);
            assertArrayEquals(expected, loaded);
            for (int t = 0; t < 256; t++) {
                assertEquals(t >= 64 && t < 128, loaded[t], "token " + t);
            }
            assertEquals(0, SyntheticKv.mismatches(viaPrepared, tokens, slots, 64, 128));
        }
    }

    @Test
    void badMasksAndForeignRequestsAreRefusedBeforeAnythingIsStored() {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine(); LMCacheEngine other = engine()) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(128, 5);
            long[] slots = SyntheticKv.slots(128, BLOCKS, 5);
            boolean[] ragged = new boolean[128];
            Arrays.fill(ragged, 10, 128, true);
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                    () -> engine.prepare(tokens, ragged, Map.of()));
            assertTrue(bad.getMessage().contains("multiple of the chunk size"), bad.getMessage());
            assertThrows(IllegalArgumentException.class, () -> engine.prepare(tokens, new boolean[3], Map.of()));

            PreparedRequest foreign = other.prepare(tokens, Map.of());
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> engine.store(foreign, kv, slots));
            assertTrue(refused.getMessage().contains("prepared by another engine"), refused.getMessage());
            assertThrows(IllegalArgumentException.class, () -> engine.store(engine.prepare(tokens, Map.of()), kv, new long[5]));
            assertEquals(0, engine.metrics().snapshot().storedTokens());
        }
    }

    @Test
    void aSecondKeyingServesItsOwnKeysFromTheSameTiersAndOnlyThisEngineTakesIt() {
        int[] separator = {200_000, 200_001};
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine(); LMCacheEngine other = engine()) {
            TokenDatabase own = engine.tokenDatabase();
            SegmentTokenDatabase segments = new SegmentTokenDatabase(separator, own.hasher(), own.keyFactory(), own.storageKeys());
            int[] a = SyntheticKv.tokens(100, 7);
            int[] b = SyntheticKv.tokens(60, 8);
            int[] tokens = new int[a.length + separator.length + b.length];
            System.arraycopy(a, 0, tokens, 0, a.length);
            System.arraycopy(separator, 0, tokens, a.length, separator.length);
            System.arraycopy(b, 0, tokens, a.length + separator.length, b.length);
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            long[] slots = SyntheticKv.slots(tokens.length, BLOCKS, 9);
            SyntheticKv.compute(kv, tokens, slots, 0, tokens.length);

            PreparedRequest bySegment = engine.prepare(tokens, null, Map.of(), segments);
            assertEquals(List.of(100, 60), bySegment.chunks().stream().map(r -> r.end() - r.start()).toList(),
                    "keyed by the second database: two segments, not 64-token chunks");
            assertEquals(160, engine.store(bySegment, kv, slots));
            assertEquals(0, engine.lookup(engine.prepare(tokens, Map.of())), "the engine's own keys are other keys");
            assertEquals(tokens.length, engine.lookup(engine.prepare(tokens, null, Map.of(), segments)));

            PagedKvCache fresh = SyntheticKv.cache(arena, BLOCKS);
            boolean[] loaded = engine.retrieve(engine.prepare(tokens, null, Map.of(), segments), fresh, slots);
            assertEquals(160, IntStream.range(0, loaded.length).filter(t -> loaded[t]).count());
            assertEquals(0, SyntheticKv.mismatches(fresh, tokens, slots, 0, a.length));

            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> other.store(bySegment, kv, slots));
            assertTrue(refused.getMessage().contains("prepared by another engine"), refused.getMessage());
            KeyFactory foreignModel = new KeyFactory("another-model", 1, 0, own.keyFactory().kvDtype());
            IllegalArgumentException wrongKeys = assertThrows(IllegalArgumentException.class, () -> engine.prepare(tokens, null,
                    Map.of(), new SegmentTokenDatabase(separator, own.hasher(), foreignModel, own.storageKeys())));
            assertTrue(wrongKeys.getMessage().contains("differ from this engine's"), wrongKeys.getMessage());
        }
    }
}
