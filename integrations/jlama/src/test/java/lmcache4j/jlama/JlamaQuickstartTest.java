package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.jlama.quickstart.JlamaQuickstart;

/**
 * docs/jlama.md's example is {@code quickstart/JlamaQuickstart.java}, compiled and run here on the
 * tiny synthetic model, and shown in the doc byte for byte.
 */
class JlamaQuickstartTest {
    private static final Path DOC = Path.of("..", "..", "docs", "jlama.md").toAbsolutePath().normalize();
    private static final Path EXAMPLE = Path.of("src", "test", "java", "lmcache4j", "jlama", "quickstart", "JlamaQuickstart.java");
    private static final String BEGIN = "<!-- example: integrations/jlama/src/test/java/lmcache4j/jlama/quickstart/JlamaQuickstart.java -->\n```java\n";

    @TempDir
    Path dir;

    @Test
    void theSecondPromptReusesTheFirstOnesKv() throws IOException {
        Random random = new Random(4);
        int[] document = random.ints(1_024, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        int[] question = random.ints(40, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        JlamaQuickstart.Result r = JlamaQuickstart.run(SyntheticLlama.tiny().writeTo(dir), document, question);
        assertEquals(1_064, r.promptTokens());
        assertEquals(1_024, r.cachedTokens(), "the document's four chunks came from the cache");
        assertTrue(r.firstToken() >= 0 && r.firstToken() < SyntheticLlama.VOCAB_SIZE);
    }

    /** What the doc promises, another process reading this KV, needs the same keys in every process: a fixed seed. */
    @Test
    void twoEnginesOfTheExamplesConfigKeyAPromptAlike() {
        ModelMetadata model = new ModelMetadata("my-org/my-model", 1, 0, lmcache4j.allocator.DType.FLOAT32, 2, 2, 32, false);
        int[] tokens = new Random(5).ints(512, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        List<List<ChunkRange>> keys = new java.util.ArrayList<>();
        for (int process = 0; process < 2; process++) {
            try (LMCacheEngine engine = LMCacheEngine.create(JlamaQuickstart.config(), model, KvConnector.host(), List.of())) {
                keys.add(engine.prepare(tokens, Map.of()).chunks());
            }
        }
        assertEquals(2, keys.getFirst().size());
        assertEquals(keys.get(0), keys.get(1), "a second engine finds the first one's chunks under the same keys");
    }

    @Test
    void theDocShowsTheExampleVerbatim() throws IOException {
        String doc = Files.readString(DOC);
        int start = doc.indexOf(BEGIN);
        assertTrue(start >= 0, DOC + " has no block starting with " + BEGIN.lines().findFirst().orElseThrow());
        start += BEGIN.length();
        int end = doc.indexOf("```\n", start);
        assertEquals(Files.readString(EXAMPLE), doc.substring(start, end), DOC + "'s example must be " + EXAMPLE + " verbatim");
    }
}
