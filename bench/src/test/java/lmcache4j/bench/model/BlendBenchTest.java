package lmcache4j.bench.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.jlama.SyntheticLlama;

/**
 * {@code bench blend} on a small synthetic Llama (4 layers, check layer 1): at ratio 1 the blend's
 * output is the full prefill's exactly; below it, the compute share follows the ratio.
 */
class BlendBenchTest {
    @TempDir
    static Path dir;

    @Test
    void ratioOneMatchesTheFullPrefillAndLowerRatiosComputeLess() throws IOException {
        Path modelDir = new SyntheticLlama(64, 4, 4, 2, 128, 4_352, 9).writeTo(dir.resolve("model"));
        AbstractModel model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        try {
            BlendBench.Result r = BlendBench.run(new BlendBench.Settings(new double[] {0, 0.25, 1.0}, 3, 200, 1, 1, 3), model,
                    "synthetic/bench-blend", new PrintStream(OutputStream.nullOutputStream()));
            List<BlendBench.Row> rows = r.rows();
            assertEquals(3, rows.size());
            BlendBench.Row all = rows.get(2);
            assertEquals(0.0, all.logitsMaxAbsDiff(), "ratio 1: the full prefill's logits");
            assertEquals(0.0, all.klDivergence());
            assertEquals(1.0, all.greedyAgreement());
            assertEquals(1.0, all.recomputedFraction(), 1e-12);
            for (BlendBench.Row row : rows) {
                assertEquals(64 + 3 * 200, row.reusedTokens(), "the system prompt and the documents reused, not the separators"
                        + " or the question: " + row);
                assertTrue(row.ttftMs() > 0 && row.ttftFullMs() > 0, row.toString());
            }
            assertTrue(rows.get(0).recomputedFraction() < rows.get(1).recomputedFraction(), rows.toString());
            assertTrue(rows.get(1).recomputedFraction() < all.recomputedFraction(), rows.toString());
            // Ratio 0: layers 0 and 1 over every position, layers 2 and 3 over the uncached ones only.
            int uncached = r.promptTokens() - rows.get(0).reusedTokens();
            assertEquals((2.0 * r.promptTokens() + 2.0 * uncached) / (4.0 * r.promptTokens()), rows.get(0).recomputedFraction(), 1e-12);
            assertTrue(rows.get(0).klDivergence() > 0, "ratio 0 reuses cached KV, so the output moves");
        } finally {
            model.close();
        }
    }

    @Test
    void aCheckLayerPastTheModelIsRefused() throws IOException {
        Path modelDir = SyntheticLlama.tiny().writeTo(dir.resolve("tiny"));
        AbstractModel model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BlendBench.run(
                    new BlendBench.Settings(new double[] {0.5}, 1, 50, 1, 2, 1), model, "t", new PrintStream(OutputStream.nullOutputStream())));
            assertTrue(e.getMessage().contains("past this model's 2 layers"), e.getMessage());
        } finally {
            model.close();
        }
    }
}
