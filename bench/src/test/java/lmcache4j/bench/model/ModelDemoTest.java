package lmcache4j.bench.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.bench.model.ModelDemo.Served;
import lmcache4j.bench.model.ModelDemo.Source;
import lmcache4j.engine.json.Json;
import lmcache4j.jlama.SyntheticLlama;
import lmcache4j.server.lm.LmCacheServer;

/**
 * The model demo and {@code bench ttft} on the tiny synthetic Llama: every tier serves warm
 * requests whose tokens equal the cold path's, and a verdict that can fail.
 */
class ModelDemoTest {
    @TempDir
    static Path dir;
    private static AbstractModel model;

    @BeforeAll
    static void load() throws IOException {
        model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir.resolve("model")).toFile(), DType.F32, DType.F32);
    }

    @AfterAll
    static void close() {
        model.close();
    }

    @Test
    void everyTierServesWarmRequestsWithTheColdPathsTokens() throws IOException {
        try (LmCacheServer server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 64L << 20, Optional.empty(), 16 << 20)) {
            ModelDemo.Settings s = new ModelDemo.Settings(0.05, Optional.of(dir.resolve("disk")), 0.05,
                    Optional.of("lm://127.0.0.1:" + server.port()), 3, 4, ModelWorkload.Shape.small());
            int[] calls = new int[1];
            List<Served> served = ModelDemo.run(s, model, "synthetic/tiny", (r, done, total) -> {
                calls[0]++;
                assertEquals(calls[0], done);
            });
            assertEquals(served.size(), calls[0]);
            Set<Source> sources = EnumSet.noneOf(Source.class);
            served.forEach(r -> sources.add(r.source()));
            assertEquals(EnumSet.allOf(Source.class), sources, "cold, CPU, disk and remote requests");
            for (Served r : served) {
                assertTrue(r.tokensEqual(), r.name() + " from " + r.source() + ": tokens differ from the cold path");
                assertTrue(r.maxLogitDiff() <= 1e-4, r.name() + ": logits differ by " + r.maxLogitDiff());
                if (r.source() != Source.COLD) {
                    assertTrue(r.cachedTokens() >= 256 && r.cachedTokens() % 256 == 0 || r.cachedTokens() == r.promptTokens() - 1,
                            r.name() + " reused " + r.cachedTokens());
                }
            }
            ModelDemoReport report = new ModelDemoReport("synthetic/tiny", served, 1_000_000_000L);
            assertTrue(report.passed());
            assertTrue(report.hitRate() > 0.5, "hit rate " + report.hitRate());
            Map<?, ?> json = (Map<?, ?>) Json.parse(report.json().toString());
            assertEquals(true, json.get("passed"));
            assertEquals(0L, ((Number) json.get("token_mismatches")).longValue());
            assertEquals(4, ((List<?>) json.get("classes")).size());
            assertTrue(report.table().contains("PASS"));
        }
    }

    @Test
    void aWarmRequestWithOtherTokensFailsTheRun() {
        Served cold = new Served(Source.COLD, ModelWorkload.Kind.DOCUMENT, "d", 300, 0, 10, 10, new int[] {1, 2},
                new int[] {1, 2}, 0, 1, 10);
        Served wrong = new Served(Source.CPU, ModelWorkload.Kind.DOCUMENT, "d", 300, 256, 5, 10, new int[] {1, 3},
                new int[] {1, 2}, 0.5, 1, 5);
        ModelDemoReport report = new ModelDemoReport("m", List.of(cold, wrong), 1);
        assertFalse(report.passed());
        assertEquals(1, report.tokenMismatches());
        assertTrue(report.table().contains("FAIL"));
        assertFalse(new ModelDemoReport("m", List.of(cold), 1).passed(), "a run that checked nothing does not pass");
    }

    @Test
    void ttftBenchMeasuresColdMissAndWarmOnOneModel() {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        List<TtftBench.Row> rows = TtftBench.run(new TtftBench.Settings(new int[] {512, 600}, 1, dir.resolve("ttft-disk"), 5),
                model, "synthetic/tiny", new PrintStream(log, true, StandardCharsets.UTF_8));
        assertEquals(2, rows.size());
        assertEquals(511, rows.get(0).cachedTokens(), "a prompt cached whole recomputes its last token only");
        assertEquals(512, rows.get(1).cachedTokens(), "full chunks only: the 88-token tail is computed");
        for (TtftBench.Row r : rows) {
            assertTrue(r.coldMs() > 0 && r.missMs() > 0 && r.warmMs() > 0 && r.warmDiskMs() > 0, r.toString());
            assertTrue(Double.isFinite(r.missOverhead()) && r.storeOverhead() >= 0, r.toString());
        }
        assertTrue(log.toString(StandardCharsets.UTF_8).contains("512 tokens"));
    }

    @Test
    void aModelDirectoryWithoutConfigJsonIsRefusedWithTheReason() throws IOException {
        Path empty = Files.createDirectories(dir.resolve("not-a-model"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ModelSource.resolve(Optional.of(empty)));
        assertTrue(e.getMessage().contains("no config.json"), e.getMessage());
    }

    /** Not "no config.json" for a directory that is not there, nor Jackson's class name and a literal backslash-n for a bad file. */
    @Test
    void aMissingOrUnreadableModelSaysWhatIsWrongWithIt() throws IOException {
        Path none = dir.resolve("no-such-model");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ModelSource.resolve(Optional.of(none))).getMessage()
                .startsWith("--model " + none + " does not exist; name a Hugging Face model directory"));
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        assertEquals("--model " + file + " is a file; name the model's directory",
                assertThrows(IllegalArgumentException.class, () -> ModelSource.resolve(Optional.of(file))).getMessage());
        Path bad = Files.createDirectories(dir.resolve("bad-model"));
        Files.writeString(bad.resolve("config.json"), "{bad\n");
        ModelSource source = ModelSource.resolve(Optional.of(bad));
        String why = assertThrows(IllegalArgumentException.class, source::load).getMessage();
        assertTrue(why.startsWith("--model " + bad + ": Jlama cannot load it: Unexpected character"), why);
        assertTrue(why.endsWith("(line 1, column 3)") && !why.contains("\\n") && !why.contains("\n") && !why.contains("com.fasterxml"), why);
    }

    @Test
    void theWorkloadIsSeededAndItsFamiliesSharePrefixes() {
        List<ModelWorkload.Request> a = ModelWorkload.requests(ModelWorkload.Shape.demo(), 1_000, 9);
        List<ModelWorkload.Request> b = ModelWorkload.requests(ModelWorkload.Shape.demo(), 1_000, 9);
        assertEquals(a.size(), b.size());
        for (int i = 0; i < a.size(); i++) {
            assertEquals(a.get(i).name(), b.get(i).name());
            assertTrue(Arrays.equals(a.get(i).tokens(), b.get(i).tokens()));
            for (int t : a.get(i).tokens()) {
                assertTrue(t >= 3 && t < 1_000);
            }
        }
        assertEquals(2 * 3 + 2 * 3 + 3, a.size());
    }
}
