package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

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
 * looked up; decode(1) is the first token and decode past the context is refused with the room
 * left; with {@code save_unfull_chunk} a prompt cached whole computes its last position only.
 *
 * <p>Jlama 0.8.4 reads its rotary table past the context for the last positions with grouped-query
 * attention (see {@link SyntheticLlama}'s {@code maxPositions}), so the prompts and decodes here
 * stay below position 598 of 600.
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

            int[] longest = new Random(1).ints(POSITIONS - 10, 3, vocabulary).toArray();
            try (CachedPrefill.Prefill p = prefill.prefillWithoutCache(longest)) {
                assertArrayEquals(new int[] {p.firstToken()}, p.decode(1), "decode(1) is the first token");
                assertEquals(1, p.tokenTimesNanos().length);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> p.decode(11));
                assertTrue(e.getMessage().contains("decode 1 to 10 tokens, not 11"), e.getMessage());
            }
            IllegalArgumentException full = assertThrows(IllegalArgumentException.class,
                    () -> prefill.prefillWithoutCache(new Random(1).ints(POSITIONS, 3, vocabulary).toArray()));
            assertTrue(full.getMessage().contains("1 to " + (POSITIONS - 1) + " tokens for this model, got " + POSITIONS),
                    full.getMessage());
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
