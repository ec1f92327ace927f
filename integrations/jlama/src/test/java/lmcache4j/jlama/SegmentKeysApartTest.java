package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
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
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;

/**
 * On a shared engine a segment's key is apart from every prefix key by its hash, not only by the
 * {@value BlendedPrefill#SEGMENT_TAG} tag: a prefix request whose configs carry that tag (any
 * client of the engine may send tags) must still not find a 256-token document stored as a segment
 * after a system prompt under its first chunk's key.
 */
class SegmentKeysApartTest {
    @TempDir
    static Path dir;
    private static AbstractModel model;
    private static int[] separator;

    @BeforeAll
    static void loadModel() throws IOException {
        model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir.resolve("model")).toFile(), DType.F32, DType.F32);
        separator = BlendSettings.separatorTokens(" # # ", model);
    }

    @AfterAll
    static void closeModel() {
        model.close();
    }

    private static int[] text(Random random, int n) {
        Set<Integer> banned = Arrays.stream(separator).boxed().collect(Collectors.toSet());
        return random.ints(3, SyntheticLlama.VOCAB_SIZE).filter(t -> !banned.contains(t)).limit(n).toArray();
    }

    private static int[] join(int[]... parts) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < parts.length; i++) {
            if (i > 0) {
                Arrays.stream(separator).forEach(out::add);
            }
            Arrays.stream(parts[i]).forEach(out::add);
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    @Test
    void aPrefixRequestCarryingTheSegmentTagStillFindsNoSegment() {
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.02).set("hash_seed", "0").set("enable_blending", true)
                .set("blend_recompute_ratios", List.of(1.0)).set("blend_check_layers", List.of(1))
                .set("blend_min_tokens", 64).build();
        Random random = new Random(1);
        int[] document = text(random, 256);
        try (LMCacheEngine engine = BlendedPrefill.sharedEngine(config, CachedPrefill.metadata(model, "synthetic/apart"),
                List.of());
             BlendedPrefill blend = new BlendedPrefill(engine, model, BlendSettings.from(config, model))) {
            try (BlendedPrefill.Result r = blend.prefill(join(text(random, 40), document, text(random, 20)))) {
                assertTrue(r.prefill().storedTokens() >= document.length, "the document's segment stored");
            }
            int[] prefixPrompt = join(document, text(random, 30));
            assertEquals(0, engine.lookup(engine.prepare(prefixPrompt, Map.of(BlendedPrefill.SEGMENT_TAG, "1"))),
                    "a tagged prefix request found the segment under its first chunk's key");
            assertEquals(0, engine.lookup(engine.prepare(prefixPrompt, Map.of())));
        }
    }
}
