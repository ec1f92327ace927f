package lmcache4j.bench.pd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.bench.model.ModelSource;
import lmcache4j.bench.model.ModelWorkload;
import lmcache4j.engine.json.Json;
import lmcache4j.jlama.SyntheticLlama;

/**
 * {@code demo --model --pd} on the tiny model with a small workload: three processes, every request's
 * tokens the single process's, only the last position computed by the decoder, the processes closed
 * cleanly; and a verdict that fails on one differing token.
 */
class PdDemoTest {
    @TempDir
    Path dir;

    @Test
    void theDemoPassesWithEveryRequestsTokensEqual() throws IOException {
        Path modelDir = SyntheticLlama.tiny().writeTo(dir.resolve("model"));
        AbstractModel model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        try {
            List<String> progress = new ArrayList<>();
            PdDemoReport report = PdDemo.run(new PdDemo.Settings(3, 4, new ModelWorkload.Shape(1, 300, 2, 1, 2, 280, 0, 0, 0),
                    64L << 20), new ModelSource(modelDir, "synthetic/tiny", true), model, dir,
                    (r, done, total) -> progress.add(done + "/" + total));
            assertEquals(List.of("1/4", "2/4", "3/4", "4/4"), progress);
            assertTrue(report.passed(), report.table());
            assertEquals(0, report.tokenMismatches());
            assertEquals(1, report.maxDecoderPrefillPositions(), "the decoder computed only the last position");
            assertTrue(report.served().stream().allMatch(PdDemo.Served::noticed));
            Map<String, Object> json = Json.parseObject(report.json());
            assertEquals(Boolean.TRUE, json.get("passed"));
            assertEquals(Boolean.TRUE, json.get("closed_cleanly"));
        } finally {
            model.close();
        }
    }

    @Test
    void oneDifferingTokenOrAnUncleanProcessFailsTheVerdict() {
        PdDemo.Served same = new PdDemo.Served("a", 300, new int[] {1, 2}, new int[] {1, 2}, 0, 1, 2, true, 10, 12);
        PdDemo.Served differs = new PdDemo.Served("b", 300, new int[] {1, 3}, new int[] {1, 2}, 0, 1, 2, true, 10, 12);
        assertTrue(new PdDemoReport("m", List.of(same), Map.of(), List.of(), 1).passed());
        PdDemoReport bad = new PdDemoReport("m", List.of(same, differs), Map.of(), List.of(), 1);
        assertFalse(bad.passed());
        assertTrue(bad.table().contains("FAIL"), bad.table());
        assertFalse(new PdDemoReport("m", List.of(same), Map.of(), List.of("decoder-0 (leak)"), 1).passed());
        assertFalse(new PdDemoReport("m", List.of(), Map.of(), List.of(), 1).passed(), "no request served is no pass");
    }
}
