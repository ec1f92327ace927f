package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;

/**
 * A blended prefill at its edges, on a 2-layer model of 600 positions (check layer 0): the longest
 * prompt the rotary table allows is blended and one more token refused; a prompt of exactly
 * {@code blend_min_tokens} blends; a prompt whose every segment is cached still computes its last
 * position (and gives the plain prefill's logits at ratio 1); a prefill told not to store leaves its
 * segments uncached; the timings and the recomputed share add up.
 */
class BlendedPrefillEdgesTest {
    @TempDir
    static Path dir;
    private static AbstractModel model;
    private static int[] separator;
    private static Set<Integer> banned;

    @BeforeAll
    static void loadModel() throws IOException {
        model = ModelSupport.loadModel(new SyntheticLlama(64, 2, 4, 2, 128, 600, 7).writeTo(dir.resolve("model")).toFile(),
                DType.F32, DType.F32);
        separator = BlendSettings.separatorTokens(" # # ", model);
        banned = Arrays.stream(separator).boxed().collect(Collectors.toSet());
    }

    @AfterAll
    static void closeModel() {
        model.close();
    }

    private static LMCacheEngine engine(int minTokens) {
        return engine(minTokens, 1.0);
    }

    private static LMCacheEngineConfig config(int minTokens, double ratio) {
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.05).set("hash_seed", "0").set("enable_blending", true)
                .set("blend_recompute_ratios", List.of(ratio)).set("blend_check_layers", List.of(0))
                .set("blend_min_tokens", minTokens).build();
    }

    private static LMCacheEngine engine(int minTokens, double ratio) {
        LMCacheEngineConfig config = config(minTokens, ratio);
        return BlendedPrefill.engine(config, CachedPrefill.metadata(model, "synthetic/blend-edges"),
                BlendSettings.from(config, model), List.of());
    }

    private static BlendedPrefill blend(LMCacheEngine engine) {
        return new BlendedPrefill(engine, model, BlendSettings.from(engine.config(), model));
    }

    private static int[] text(Random random, int n) {
        return random.ints(3, SyntheticLlama.VOCAB_SIZE).filter(t -> !banned.contains(t)).limit(n).toArray();
    }

    private static int[] join(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + separator.length + b.length);
        System.arraycopy(separator, 0, out, a.length, separator.length);
        System.arraycopy(b, 0, out, a.length + separator.length, b.length);
        return out;
    }

    @Test
    void theLongestPromptTheRotaryTableAllowsIsBlendedAndOneMoreTokenRefused() {
        int longest = KeyRotation.of(model.getConfig()).lastPosition() + 1;
        try (LMCacheEngine engine = engine(16); BlendedPrefill blend = blend(engine)) {
            try (BlendedPrefill.Result r = blend.prefill(text(new Random(1), longest), false)) {
                assertEquals(longest, r.prefill().promptTokens());
            }
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> blend.prefill(text(new Random(1), longest + 1), false));
            assertTrue(e.getMessage().contains("1 to " + longest + " tokens for this model, got " + (longest + 1)), e.getMessage());
            assertEquals(598, longest, "600 positions, 2 KV heads: the table ends for the second head at position 597");
        }
    }

    @Test
    void aPromptOfExactlyBlendMinTokensBlends() {
        Random random = new Random(2);
        int[] document = text(random, 120);
        int[] prompt = join(text(random, 30), document);
        try (LMCacheEngine engine = engine(prompt.length); BlendedPrefill blend = blend(engine)) {
            blend.prefill(join(text(random, 20), document)).close();
            try (BlendedPrefill.Result r = blend.prefill(prompt)) {
                assertEquals(document.length - 1, r.prefill().cachedTokens(),
                        "the document's segment, cached from another prompt, but for the prompt's last position");
            }
        }
        try (LMCacheEngine engine = engine(prompt.length + 1); BlendedPrefill blend = blend(engine)) {
            blend.prefill(join(text(random, 20), document)).close();
            try (BlendedPrefill.Result r = blend.prefill(prompt)) {
                assertEquals(0, r.prefill().cachedTokens(), "one token short of blend_min_tokens: prefilled whole");
            }
        }
    }

    @Test
    void aPromptCachedWholeComputesItsLastPositionAndAPrefillNotToldToStoreStoresNothing() {
        Random random = new Random(3);
        int[] prompt = join(text(random, 40), text(random, 150));
        try (LMCacheEngine engine = engine(16); BlendedPrefill blend = blend(engine);
             CachedPrefill plain = new CachedPrefill(engine, model)) {
            float[] full;
            try (CachedPrefill.Prefill p = plain.prefillWithoutCache(prompt)) {
                full = p.logits();
            }
            try (BlendedPrefill.Result r = blend.prefill(prompt, false)) {
                assertEquals(0, r.prefill().storedTokens(), "told not to store");
                assertEquals(1.0, r.recomputedFraction(), "nothing cached: every token-layer computed");
            }
            long before = System.nanoTime();
            try (BlendedPrefill.Result r = blend.prefill(prompt)) {
                long wall = System.nanoTime() - before;
                assertTrue(r.prefill().storeNanos() > 0 && r.prefill().timeToFirstTokenNanos() + r.prefill().storeNanos() <= wall,
                        "the store follows the first token, inside the call: " + r.prefill().timeToFirstTokenNanos() + " + "
                                + r.prefill().storeNanos() + " ns, call " + wall + " ns");
                assertEquals(0, r.prefill().cachedTokens(), "the prefill before stored nothing");
                assertEquals(prompt.length - separator.length, r.prefill().storedTokens(), "both segments stored now (the separator is no segment's)");
                assertTimingsAddUp(r);
            }
            try (BlendedPrefill.Result r = blend.prefill(prompt)) {
                assertEquals(prompt.length - separator.length - 1, r.prefill().cachedTokens(),
                        "every position of both segments from the cache but the prompt's last");
                assertEquals(prompt.length, r.recomputedTokens(), "ratio 1: every cached position recomputed too");
                assertArrayEquals(full, r.prefill().logits(), 1e-4f, "ratio 1 gives the plain prefill's logits");
                assertTimingsAddUp(r);
            }
        }
    }

    @Test
    void anEngineForAnotherModelAndACheckLayerPastTheModelAreRefused() {
        BlendSettings last = new BlendSettings(separator, 1.0, 1, 16);
        try (LMCacheEngine engine = engine(16); BlendedPrefill blend = new BlendedPrefill(engine, model, last)) {
            assertEquals(last, blend.settings(), "check layer 1, the last of 2, is accepted");
            IllegalArgumentException past = assertThrows(IllegalArgumentException.class,
                    () -> new BlendedPrefill(engine, model, new BlendSettings(separator, 1.0, 2, 16)));
            assertTrue(past.getMessage().contains("blend_check_layers: layer 2 is past this model's 2 layers"), past.getMessage());
        }
        ModelMetadata threeLayers = new ModelMetadata("synthetic/blend-edges", 1, 0, lmcache4j.allocator.DType.FLOAT32, 3, 2, 16,
                false);
        try (LMCacheEngine other = BlendedPrefill.engine(config(16, 1.0), threeLayers, last, List.of())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new BlendedPrefill(other, model, last));
            assertTrue(e.getMessage().contains("the engine was made for"), e.getMessage());
        }
    }

    /**
     * At recompute ratio 0.25 with check layer 0 of 2, every position runs layer 0 and only the
     * recomputed ones layer 1: the fraction computed is {@code (n + recomputed) / 2n}, below 1, and
     * the predicted speedup its inverse, above 1.
     */
    @Test
    void belowRatioOneTheRecomputedFractionIsBelowOneAndThePredictedSpeedupItsInverse() {
        Random random = new Random(4);
        int[] prompt = join(text(random, 40), text(random, 200));
        try (LMCacheEngine engine = engine(16, 0.25); BlendedPrefill blend = blend(engine)) {
            blend.prefill(prompt).close();
            try (BlendedPrefill.Result r = blend.prefill(prompt)) {
                int n = prompt.length;
                assertEquals(n - separator.length - 1, r.prefill().cachedTokens());
                assertTrue(r.recomputedTokens() < n && r.recomputedTokens() > separator.length,
                        "the separator, the last position and a quarter of the cached ones: " + r.recomputedTokens());
                assertEquals((n + r.recomputedTokens()) / (2.0 * n), r.recomputedFraction(), 1e-12);
                assertEquals(2.0 * n / (n + r.recomputedTokens()), r.predictedSpeedup(), 1e-12);
                assertTrue(r.predictedSpeedup() > 1, "less computed than a full prefill: " + r.predictedSpeedup());
            }
        }
    }

    private static void assertTimingsAddUp(BlendedPrefill.Result r) {
        CachedPrefill.Prefill p = r.prefill();
        assertEquals(0, p.lookupNanos(), "a blended prefill has no separate lookup");
        assertTrue(p.retrieveNanos() > 0 && p.computeNanos() > 0, "loading and computing each take time");
        assertEquals(p.timeToFirstTokenNanos(), p.retrieveNanos() + p.computeNanos());
        assertTrue(p.storeNanos() >= 0);
        assertEquals(1 / r.recomputedFraction(), r.predictedSpeedup(), 1e-12);
    }
}
