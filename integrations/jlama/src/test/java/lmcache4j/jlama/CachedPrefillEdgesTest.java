package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.KvBufferCache;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;

/**
 * A prefix-cached prefill at its edges, on a 2-layer model of 600 positions (so a prompt can come
 * near the context cheaply): the first and last token ids are accepted and one past each refused, a
 * prompt of the whole context is refused naming the range; a prompt shorter than a chunk is not
 * looked up; decode(1) is the first token and decode past the last position is refused with the
 * room left; the longest prompt Jlama's rotary table allows is prefilled and one more token refused;
 * with {@code save_unfull_chunk} a prompt cached whole computes its last position only.
 */
class CachedPrefillEdgesTest {
    private static final int POSITIONS = 600;

    @TempDir
    static Path dir;
    private static AbstractModel model;

    @BeforeAll
    static void loadModel() throws IOException {
        model = ModelSupport.loadModel(new SyntheticLlama(64, 2, 4, 2, 128, POSITIONS, 7).writeTo(dir.resolve("model")).toFile(),
                DType.F32, DType.F32);
    }

    @AfterAll
    static void closeModel() {
        model.close();
    }

    private static LMCacheEngine engine(boolean saveUnfullChunk) {
        return LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.05).set("hash_seed", "0").set("save_unfull_chunk", saveUnfullChunk).build(),
                CachedPrefill.metadata(model, "synthetic/edges"), KvConnector.host(1), List.of());
    }

    @Test
    void theEdgesOfThePromptAreAcceptedAndOnePastThemRefused() {
        int vocabulary = model.getConfig().vocabularySize;
        try (LMCacheEngine engine = engine(false); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            assertSame(model, prefill.model());
            try (CachedPrefill.Prefill p = prefill.prefill(new int[] {0, vocabulary - 1})) {
                assertEquals(2, p.promptTokens(), "token ids 0 and vocabulary - 1 are tokens");
                assertEquals(0, p.lookupNanos(), "a prompt shorter than a chunk has nothing to look up");
                assertEquals(0, p.storedTokens());
            }
            IllegalArgumentException past = assertThrows(IllegalArgumentException.class,
                    () -> prefill.prefill(new int[] {1, vocabulary}));
            assertTrue(past.getMessage().contains("token 1 is " + vocabulary + ", outside the vocabulary"), past.getMessage());
            assertThrows(IllegalArgumentException.class, () -> prefill.prefill(new int[] {-1, 1}));

            int[] nearTheEnd = new Random(1).ints(POSITIONS - 10, 3, vocabulary).toArray();
            try (CachedPrefill.Prefill p = prefill.prefillWithoutCache(nearTheEnd)) {
                assertArrayEquals(new int[] {p.firstToken()}, p.decode(1), "decode(1) is the first token");
                assertEquals(1, p.tokenTimesNanos().length);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> p.decode(10));
                assertTrue(e.getMessage().contains("decode 1 to 9 tokens, not 10"), e.getMessage());
            }
        }
    }

    /**
     * Decoding feeds each token at the next position: every decoded token is the first token a plain
     * prefill of the prompt with the tokens decoded before it gives, and the KV decoding wrote is that
     * prefill's, position for position (the same model computed another way: one batch instead of one
     * position at a time, so equal up to float rounding).
     */
    @Test
    void eachDecodedTokenIsTheGreedyNextTokenOfThePromptAndTheTokensBeforeIt() {
        int[] prompt = new Random(5).ints(40, 3, model.getConfig().vocabularySize).toArray();
        try (LMCacheEngine engine = engine(false); CachedPrefill prefill = new CachedPrefill(engine, model);
             Arena arena = Arena.ofConfined();
             CachedPrefill.Prefill p = prefill.prefillWithoutCache(prompt)) {
            int[] decoded = p.decode(5);
            int[] longer = Arrays.copyOf(prompt, prompt.length + decoded.length - 1);
            System.arraycopy(decoded, 0, longer, prompt.length, decoded.length - 1);
            for (int i = 1; i < decoded.length; i++) {
                try (CachedPrefill.Prefill q = prefill.prefillWithoutCache(Arrays.copyOf(longer, prompt.length + i))) {
                    assertEquals(q.firstToken(), decoded[i], "decoded token " + i + " of " + Arrays.toString(decoded));
                }
            }
            try (CachedPrefill.Prefill q = prefill.prefillWithoutCache(longer)) {
                float[] fed = kv(p.kv(), longer.length, arena);
                float[] batched = kv(q.kv(), longer.length, arena);
                float worst = 0;
                float largest = 0;
                for (int i = 0; i < fed.length; i++) {
                    worst = Math.max(worst, Math.abs(fed[i] - batched[i]));
                    largest = Math.max(largest, Math.abs(batched[i]));
                }
                assertTrue(largest > 0 && worst <= 1e-4f * largest, "the decoded positions' KV differs by " + worst + " (largest " + largest + ")");
            }
        }
    }

    private static float[] kv(JlamaKvCache kv, int positions, Arena arena) {
        MemorySegment chunk = arena.allocate(2L * kv.layerCount() * positions * kv.numKvHeads() * kv.headSize() * Float.BYTES);
        kv.gather(0, positions, chunk);
        return chunk.toArray(ValueLayout.JAVA_FLOAT);
    }

    /**
     * Jlama 0.8.4 reads its rotary table at {@code p·headSize/2 + h·headSize + j} for KV head h, so
     * with 2 KV heads of 16 elements the table of 600 × 8 rows ends for the second head at position
     * 597: a prompt of 598 tokens is the longest (and decodes up to that position), 599 is refused up
     * front, naming the limit, where Jlama itself would fail with an index out of bounds.
     */
    @Test
    void theLongestPromptJlamasRotaryTableAllowsIsAcceptedAndOneMoreTokenRefused() {
        int vocabulary = model.getConfig().vocabularySize;
        int longest = POSITIONS - 2;
        assertEquals(longest, CachedPrefill.longestPrompt(model.getConfig()));
        int[] tooLong = new Random(2).ints(longest + 1, 3, vocabulary).toArray();
        assertThrows(ArrayIndexOutOfBoundsException.class, () -> {
            try (KvBufferCache buffers = new KvBufferCache(model); KvBufferCache.KvBuffer buffer = buffers.getEphemeralKvBuffer()) {
                model.batchForward(tooLong, 0, buffer).close();
            }
        }, "Jlama itself fails one token past the limit");
        try (LMCacheEngine engine = engine(false); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            int[] prompt = Arrays.copyOf(tooLong, longest);
            try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
                assertEquals(longest, p.promptTokens());
                assertEquals(512, p.storedTokens(), "the two whole chunks");
            }
            try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
                assertEquals(512, p.cachedTokens());
                assertEquals(1, p.decode(1).length, "the longest prompt leaves room for its first token only");
                assertThrows(IllegalArgumentException.class, () -> p.decode(2));
            }
            try (CachedPrefill.Prefill p = prefill.prefillWithoutCache(Arrays.copyOf(prompt, longest - 5))) {
                assertEquals(6, p.decode(6).length, "decoding feeds positions up to the last one the table covers");
            }
            for (int[] refused : List.of(tooLong, new Random(3).ints(POSITIONS, 3, vocabulary).toArray())) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> prefill.prefill(refused));
                assertTrue(e.getMessage().contains("a prompt has 1 to " + longest + " tokens for this model, got " + refused.length
                        + " (its context is 600 positions, and Jlama's rotary table covers positions 0 to 597 for its 2 KV heads)"),
                        e.getMessage());
                assertThrows(IllegalArgumentException.class, () -> prefill.prefillWithoutCache(refused));
            }
        }
    }

    @Test
    void withSaveUnfullChunkAPromptCachedWholeComputesOnlyItsLastPosition() {
        int[] prompt = new Random(3).ints(300, 3, model.getConfig().vocabularySize).toArray();
        try (LMCacheEngine engine = engine(true); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            float[] cold;
            try (CachedPrefill.Prefill first = prefill.prefill(prompt)) {
                assertEquals(0, first.cachedTokens());
                assertEquals(300, first.storedTokens(), "the whole chunk and the partial one");
                cold = first.logits();
            }
            try (CachedPrefill.Prefill warm = prefill.prefill(prompt)) {
                assertEquals(299, warm.cachedTokens(), "every position but the last from the cache");
                assertEquals(1, warm.computedTokens());
                assertArrayEquals(cold, warm.logits(), 1e-4f, "the last position over the cached KV gives the same logits");
            }
        }
    }
}
