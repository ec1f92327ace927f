package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The generated model's files: a safetensors file whose tensors have Llama's names and shapes, laid
 * end to end, with the initialisation the class documents (normal, standard deviation 1 for the
 * embeddings, 1/√width for the input projections and the head, 0.2/√(2·layers) for the projections
 * back into the residual stream, ones for the norms), the same bytes for the same seed.
 */
class SyntheticLlamaTest {
    private static final Pattern TENSOR = Pattern.compile(
            "\"([^\"]+)\":\\{\"dtype\":\"F32\",\"shape\":\\[(\\d+)(?:,(\\d+))?\\],\"data_offsets\":\\[(\\d+),(\\d+)\\]\\}");

    @TempDir
    Path dir;

    private record Tensor(int rows, int cols, long from, long to) {
    }

    @Test
    void theWeightsHaveLlamasNamesShapesAndDocumentedScales() throws IOException {
        SyntheticLlama spec = new SyntheticLlama(128, 3, 4, 2, 384, 1_024, 11);
        byte[] file = Files.readAllBytes(spec.writeTo(dir.resolve("m")).resolve("model.safetensors"));
        ByteBuffer data = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        long headerLength = data.getLong(0);
        assertEquals(0, (8 + headerLength) % 8, "the data starts 8-byte aligned");
        String header = new String(file, 8, (int) headerLength, StandardCharsets.UTF_8);
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        Matcher m = TENSOR.matcher(header);
        while (m.find()) {
            int rows = m.group(3) == null ? 1 : Integer.parseInt(m.group(2));
            int cols = Integer.parseInt(m.group(3) == null ? m.group(2) : m.group(3));
            tensors.put(m.group(1), new Tensor(rows, cols, Long.parseLong(m.group(4)), Long.parseLong(m.group(5))));
        }
        assertEquals(2 + 3 * 9 + 1, tensors.size(), header);
        long end = 0;
        for (Tensor t : tensors.values()) {
            assertEquals(end, t.from(), "tensors laid end to end");
            assertEquals((long) t.rows() * t.cols() * Float.BYTES, t.to() - t.from());
            end = t.to();
        }
        assertEquals(file.length, 8 + headerLength + end, "the file ends with the last tensor");

        double input = 1 / Math.sqrt(128);
        double output = 0.2 / Math.sqrt(2 * 3);
        int vocab = SyntheticLlama.VOCAB_SIZE;
        int kv = 2 * (128 / 4);
        expect(tensors, data, headerLength, "model.embed_tokens.weight", vocab, 128, 1.0);
        for (int l = 0; l < 3; l++) {
            String p = "model.layers." + l + ".";
            expect(tensors, data, headerLength, p + "input_layernorm.weight", 1, 128, 0);
            expect(tensors, data, headerLength, p + "self_attn.q_proj.weight", 128, 128, input);
            expect(tensors, data, headerLength, p + "self_attn.k_proj.weight", kv, 128, input);
            expect(tensors, data, headerLength, p + "self_attn.v_proj.weight", kv, 128, input);
            expect(tensors, data, headerLength, p + "self_attn.o_proj.weight", 128, 128, output);
            expect(tensors, data, headerLength, p + "post_attention_layernorm.weight", 1, 128, 0);
            expect(tensors, data, headerLength, p + "mlp.gate_proj.weight", 384, 128, input);
            expect(tensors, data, headerLength, p + "mlp.up_proj.weight", 384, 128, input);
            expect(tensors, data, headerLength, p + "mlp.down_proj.weight", 128, 384, output);
        }
        expect(tensors, data, headerLength, "model.norm.weight", 1, 128, 0);
        expect(tensors, data, headerLength, "lm_head.weight", vocab, 128, input);
    }

    /** The tensor's shape, and its values: all ones for {@code std} 0, else mean 0 and that deviation within 5 %. */
    private static void expect(Map<String, Tensor> tensors, ByteBuffer data, long headerLength, String name, int rows, int cols,
                               double std) {
        Tensor t = tensors.get(name);
        assertTrue(t != null, name + " missing");
        assertEquals(rows, t.rows(), name + " rows");
        assertEquals(cols, t.cols(), name + " columns");
        long n = (long) rows * cols;
        double sum = 0;
        double squares = 0;
        for (long i = 0; i < n; i++) {
            float v = data.getFloat((int) (8 + headerLength + t.from() + 4 * i));
            if (std == 0) {
                assertEquals(1.0f, v, name + " is a norm: ones");
            }
            sum += v;
            squares += (double) v * v;
        }
        if (std > 0) {
            double mean = sum / n;
            double measured = Math.sqrt(squares / n - mean * mean);
            assertEquals(0, mean, 5 * std / Math.sqrt(n), name + " mean");
            assertEquals(std, measured, 0.05 * std, name + " standard deviation");
        }
    }

    @Test
    void theSameParametersWriteTheSameBytesAndAnotherSeedOthers() throws IOException {
        SyntheticLlama a = new SyntheticLlama(64, 1, 2, 1, 128, 512, 3);
        byte[] first = Files.readAllBytes(a.writeTo(dir.resolve("a")).resolve("model.safetensors"));
        byte[] again = Files.readAllBytes(new SyntheticLlama(64, 1, 2, 1, 128, 512, 3).writeTo(dir.resolve("b"))
                .resolve("model.safetensors"));
        byte[] other = Files.readAllBytes(new SyntheticLlama(64, 1, 2, 1, 128, 512, 4).writeTo(dir.resolve("c"))
                .resolve("model.safetensors"));
        assertArrayEquals(first, again);
        assertFalse(java.util.Arrays.equals(first, other));
    }

    @Test
    void aModelDirectoryIsRewrittenOnlyWhenItsParametersChangedOrAFileIsMissing() throws IOException {
        Path m = dir.resolve("m");
        new SyntheticLlama(64, 1, 2, 1, 128, 512, 3).writeTo(m);
        Path weights = m.resolve("model.safetensors");
        Files.write(weights, new byte[] {1, 2, 3}); // a changed file under an unchanged marker is left alone...
        assertEquals(m, new SyntheticLlama(64, 1, 2, 1, 128, 512, 3).writeTo(m), "the directory, written or found");
        assertEquals(3, Files.size(weights));
        new SyntheticLlama(64, 1, 2, 1, 128, 512, 5).writeTo(m); // ...other parameters rewrite it
        assertTrue(Files.size(weights) > 3);
        Files.delete(m.resolve("tokenizer.json"));
        new SyntheticLlama(64, 1, 2, 1, 128, 512, 5).writeTo(m);
        assertTrue(Files.exists(m.resolve("tokenizer.json")), "a missing file is written again");
    }

    @Test
    void sizesThatMakeNoLlamaAreRefusedNamingThem() {
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
                () -> new SyntheticLlama(64, 0, 2, 1, 128, 512, 3));
        assertTrue(zero.getMessage().contains("0 layers"), zero.getMessage());
        IllegalArgumentException odd = assertThrows(IllegalArgumentException.class,
                () -> new SyntheticLlama(66, 1, 2, 1, 128, 512, 3));
        assertTrue(odd.getMessage().contains("even head size"), odd.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new SyntheticLlama(64, 1, 4, 3, 128, 512, 3));
        assertEquals(32, new SyntheticLlama(64, 1, 2, 1, 128, 512, 3).headSize());
    }

    @Test
    void aZeroInAnySizeIsRefusedAsNotPositive() {
        int[] valid = {64, 1, 2, 1, 128, 512};
        for (int i = 0; i < valid.length; i++) {
            int[] s = valid.clone();
            s[i] = 0;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new SyntheticLlama(s[0], s[1], s[2], s[3], s[4], s[5], 3), "size " + i + " zero");
            assertTrue(e.getMessage().startsWith("every size must be positive"), e.getMessage());
        }
    }

    @Test
    void theDemoAndBlendModelsHaveTheirDocumentedSizes() {
        assertEquals(new SyntheticLlama(256, 4, 8, 2, 768, 16_640, 42), SyntheticLlama.demo());
        assertEquals(new SyntheticLlama(256, 12, 8, 2, 768, 16_640, 42), SyntheticLlama.blend());
        assertEquals(32, SyntheticLlama.blend().headSize());
    }

    /** Strict JSON (no trailing or missing commas), as Hugging Face's tokenizers library reads it. */
    @Test
    void theTokenizerIsStrictJsonWithEveryTokenAndMerge() throws IOException {
        JsonNode json = new ObjectMapper().readTree(SyntheticLlama.tokenizerJson());
        assertEquals(3, json.get("added_tokens").size());
        assertEquals("</s>", json.get("added_tokens").get(2).get("content").asText());
        assertEquals(SyntheticLlama.VOCAB_SIZE, json.get("model").get("vocab").size());
        assertEquals(27 * 27, json.get("model").get("merges").size());
        assertEquals("\u2581 \u2581", json.get("model").get("merges").get(0).asText());
        assertEquals(SyntheticLlama.VOCAB_SIZE - 1, json.get("model").get("vocab").get("zz").asInt());
    }
}
