package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.config.ConfigLoader;

/**
 * The blend settings at their edges: a ratio of exactly 0 or 1, check layer 0 and the model's last
 * layer, blend_min_tokens 0 are settings; a hair outside any of them is refused naming the key. The
 * separator is the settings' own copy, and two settings are equal when their values are.
 */
class BlendSettingsTest {
    private static final int[] SEPARATOR = {5, 6};

    @TempDir
    Path dir;

    @Test
    void theEdgesOfEachRangeAreInsideAndAHairPastThemIsRefused() {
        assertEquals(0.0, new BlendSettings(SEPARATOR, 0.0, 0, 0).recomputeRatio());
        assertEquals(1.0, new BlendSettings(SEPARATOR, 1.0, 0, 0).recomputeRatio());
        assertRefused(() -> new BlendSettings(SEPARATOR, -1e-9, 0, 0), "blend_recompute_ratios");
        assertRefused(() -> new BlendSettings(SEPARATOR, 1 + 1e-9, 0, 0), "blend_recompute_ratios");
        assertRefused(() -> new BlendSettings(SEPARATOR, Double.NaN, 0, 0), "blend_recompute_ratios");
        assertRefused(() -> new BlendSettings(SEPARATOR, 0.5, -1, 0), "blend_check_layers");
        assertRefused(() -> new BlendSettings(SEPARATOR, 0.5, 0, -1), "blend_min_tokens");
        assertRefused(() -> new BlendSettings(new int[0], 0.5, 0, 0), "blend_special_str");
        assertThrows(NullPointerException.class, () -> new BlendSettings(null, 0.5, 0, 0));
    }

    @Test
    void theSeparatorIsTheSettingsOwnCopyAndEqualValuesAreEqualSettings() {
        int[] given = SEPARATOR.clone();
        BlendSettings s = new BlendSettings(given, 0.25, 1, 64);
        given[0] = 99;
        int[] read = s.separator();
        read[1] = 98;
        assertArrayEquals(SEPARATOR, s.separator(), "neither the caller's array nor a returned one is the settings'");

        BlendSettings same = new BlendSettings(SEPARATOR.clone(), 0.25, 1, 64);
        assertEquals(s, same);
        assertEquals(s.hashCode(), same.hashCode());
        for (BlendSettings other : List.of(new BlendSettings(new int[] {5, 7}, 0.25, 1, 64), new BlendSettings(SEPARATOR, 0.5, 1, 64),
                new BlendSettings(SEPARATOR, 0.25, 2, 64), new BlendSettings(SEPARATOR, 0.25, 1, 65))) {
            assertNotEquals(s, other);
            assertNotEquals(s.hashCode(), other.hashCode(), "every value takes part in the hash: " + other);
        }
        assertNotEquals(s, "BlendSettings");
        assertEquals("BlendSettings[separator=[5, 6], recomputeRatio=0.25, checkLayer=1, minTokens=64]", s.toString());
        assertEquals(new BlendSettings(SEPARATOR, 1.0, 1, 64), s.withRecomputeRatio(1.0), "only the ratio changes");
    }

    @Test
    void fromAConfigTakesTheFirstRatioAndAcceptsTheLastLayerOnly() throws IOException {
        AbstractModel model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir).toFile(), DType.F32, DType.F32);
        try {
            int last = model.getConfig().numberOfLayers - 1;
            BlendSettings s = BlendSettings.from(config(List.of(0.3, 0.7), last, 7), model);
            assertEquals(0.3, s.recomputeRatio(), "the first of blend_recompute_ratios");
            assertEquals(last, s.checkLayer());
            assertEquals(7, s.minTokens());
            assertArrayEquals(BlendSettings.separatorTokens(" # # ", model), s.separator());
            assertRefused(() -> BlendSettings.from(config(List.of(0.3), last + 1, 7), model),
                    "layer 2 is past this model's 2 layers (0 to 1)");
            assertRefused(() -> BlendSettings.from(config(List.of(), 0, 7), model), "blend_recompute_ratios is empty");
            assertEquals(0, BlendSettings.separatorTokens("", model).length, "nothing to split at, not a lone BOS");
            assertThrows(NullPointerException.class, () -> BlendSettings.from(null, model));
            assertThrows(NullPointerException.class, () -> BlendSettings.from(config(List.of(0.3), 0, 7), null));
        } finally {
            model.close();
        }
    }

    private static lmcache4j.engine.config.LMCacheEngineConfig config(List<Double> ratios, int check, int minTokens) {
        return ConfigLoader.builder().environment(Map.of()).set("enable_blending", true)
                .set("blend_recompute_ratios", ratios).set("blend_check_layers", List.of(check))
                .set("blend_min_tokens", minTokens).build();
    }

    private static void assertRefused(Executable make, String key) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, make);
        assertTrue(e.getMessage().contains(key), e.getMessage());
    }
}
