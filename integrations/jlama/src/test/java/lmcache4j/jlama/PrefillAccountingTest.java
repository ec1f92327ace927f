package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
 * What a prefill reports of itself adds up: its phases make its time to first token, the tokens it
 * took from the cache and computed make the prompt, what it stored is what the next prefill finds,
 * the first token is the logits' greedy choice, and decode's times are the tokens' own, in order.
 */
class PrefillAccountingTest {
    @TempDir
    static Path dir;
    private static AbstractModel model;

    @BeforeAll
    static void loadModel() throws IOException {
        model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir.resolve("model")).toFile(), DType.F32, DType.F32);
    }

    @AfterAll
    static void closeModel() {
        model.close();
    }

    private static LMCacheEngine engine() {
        return LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.05).set("hash_seed", "0").set("save_unfull_chunk", false).build(),
                CachedPrefill.metadata(model, "synthetic/tiny"), KvConnector.host(1), List.of());
    }

    @Test
    void aPrefillsPhasesAndTokensAddUp() {
        int[] prompt = new Random(3).ints(600, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        try (LMCacheEngine engine = engine(); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            long before = System.nanoTime();
            try (CachedPrefill.Prefill cold = prefill.prefill(prompt)) {
                long wall = System.nanoTime() - before;
                assertAddsUp(cold, prompt.length, 0);
                assertEquals(512, cold.storedTokens(), "two whole chunks stored, the partial one not");
                assertTrue(cold.storeNanos() > 0, "the store took time: " + cold.storeNanos());
                assertTrue(cold.timeToFirstTokenNanos() + cold.storeNanos() <= wall, "the store follows the first token, "
                        + "inside the call: " + cold.timeToFirstTokenNanos() + " + " + cold.storeNanos() + " ns, call " + wall + " ns");
                assertTrue(cold.lookupNanos() > 0, "a prompt of whole chunks is looked up");
            }
            try (CachedPrefill.Prefill warm = prefill.prefill(prompt)) {
                assertAddsUp(warm, prompt.length, 512);
                assertTrue(warm.retrieveNanos() > 0, "two chunks retrieved");
                assertEquals(0, warm.storedTokens(), "nothing new to store");
                int[] tokens = warm.decode(4);
                assertEquals(warm.firstToken(), tokens[0]);
                long[] times = warm.tokenTimesNanos();
                assertEquals(4, times.length);
                for (int i = 1; i < times.length; i++) {
                    assertTrue(times[i] > times[i - 1], "token " + i + " sampled after token " + (i - 1));
                }
                assertTrue(warm.pushResult().isEmpty(), "not a prefiller's prefill");
            }
            try (CachedPrefill.Prefill plain = prefill.prefillWithoutCache(prompt)) {
                assertAddsUp(plain, prompt.length, 0);
                assertEquals(0, plain.lookupNanos());
                assertEquals(0, plain.retrieveNanos());
                assertEquals(0, plain.storedTokens());
                assertEquals(0, plain.tokenTimesNanos().length, "nothing decoded yet");
                assertTrue(assertThrows(IllegalArgumentException.class, () -> plain.decode(0)).getMessage().contains("decode 1 to"));
                int room = CachedPrefill.longestPrompt(model.getConfig()) + 1 - prompt.length;
                assertTrue(assertThrows(IllegalArgumentException.class, () -> plain.decode(room + 1)).getMessage()
                        .contains("decode 1 to " + room + " tokens"));
            }
        }
    }

    private static void assertAddsUp(CachedPrefill.Prefill p, int promptTokens, int cached) {
        assertEquals(promptTokens, p.promptTokens());
        assertEquals(cached, p.cachedTokens());
        assertEquals(promptTokens - cached, p.computedTokens());
        assertTrue(p.computeNanos() > 0 && p.lookupNanos() >= 0 && p.retrieveNanos() >= 0, "every phase is a duration");
        assertEquals(p.timeToFirstTokenNanos(), p.lookupNanos() + p.retrieveNanos() + p.computeNanos(),
                "lookup, retrieve and compute make the time to first token");
        float[] logits = p.logits();
        int greedy = 0;
        for (int i = 1; i < logits.length; i++) {
            greedy = logits[i] > logits[greedy] ? i : greedy;
        }
        assertEquals(greedy, p.firstToken(), "the first token is the logits' largest");
        logits[greedy] = Float.NaN;
        assertTrue(!Float.isNaN(p.logits()[greedy]), "logits() is a copy");
    }
}
