package lmcache4j.bench.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.jlama.SyntheticLlama;

/**
 * {@code demo --model --blend} on a small synthetic Llama: every request's blend at ratio 1 is its
 * full prefill bit for bit; documents in a new order are reused by blending beyond what prefix
 * caching finds; a repeated prompt is reused whole (all but its last token) both ways.
 */
class BlendDemoTest {
    @TempDir
    static Path dir;

    @Test
    void blendingReusesDocumentsInAnyOrderAndMatchesTheFullPrefillAtRatioOne() throws IOException {
        Path modelDir = new SyntheticLlama(64, 4, 4, 2, 128, 4_352, 11).writeTo(dir.resolve("model"));
        AbstractModel model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        try {
            List<BlendDemo.Served> served = BlendDemo.run(new BlendDemo.Settings(5, 4, 2, 3, 0.15), model, "synthetic/blend-demo",
                    r -> { });
            assertEquals(4, served.size(), "two requests and two repeats");
            for (int i = 0; i < served.size(); i++) {
                BlendDemo.Served r = served.get(i);
                assertTrue(r.ratioOneIdentical(), r.name() + ": the ratio-1 blend differs from the full prefill");
                if (r.repeat()) {
                    // The first serving stored the question's segment: all of it but the last token (always
                    // computed) is reused now. Separators belong to no segment and are computed each time.
                    assertEquals(served.get(i - 2).reusedBlend() + BlendDemo.QUESTION_TOKENS - 1, r.reusedBlend(), r.toString());
                } else {
                    assertTrue(r.reusedBlend() > r.reusedPrefix(), "blending reuses documents out of order: " + r);
                    assertTrue(r.recomputedFraction() < 1, r.toString());
                }
            }
            String table = BlendDemo.table("synthetic/blend-demo", new BlendDemo.Settings(5, 4, 2, 3, 0.15), served);
            assertTrue(table.contains("random"), table);
        } finally {
            model.close();
        }
    }
}
