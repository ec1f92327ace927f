package lmcache4j.jlama;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A Llama-architecture model directory that Jlama loads ({@code config.json}, {@code tokenizer.json},
 * {@code model.safetensors}) with weights drawn from a seeded generator: nothing is downloaded, the
 * same parameters give the same bytes on every machine, and the forward pass is a real one (RMSNorm,
 * rotary embeddings, grouped-query attention, SwiGLU), so its compute and its KV are those of a
 * Llama of this size. What it writes as text is meaningless.
 *
 * @param hiddenSize       model width
 * @param layers           transformer blocks
 * @param heads            query heads
 * @param kvHeads          key/value heads (fewer than {@code heads}: grouped-query attention)
 * @param intermediateSize the MLP's inner width
 * @param maxPositions     the context length; above the longest prompt plus its decode
 *                         (Jlama 0.8.4 reads its rotary table a little past the context with GQA)
 * @param seed             the weights' seed
 */
public record SyntheticLlama(int hiddenSize, int layers, int heads, int kvHeads, int intermediateSize,
                             int maxPositions, long seed) {
    /** Tokens of the vocabulary: 3 special tokens, 256 byte tokens, 27 letters and their pairs (Llama's SentencePiece style). */
    public static final int VOCAB_SIZE = 3 + 256 + 27 + 27 * 27;
    private static final String LETTERS = "\u2581abcdefghijklmnopqrstuvwxyz"; // ▁ is SentencePiece's space
    private static final String MARKER = "lmcache4j-synthetic-llama.json";

    public SyntheticLlama {
        if (hiddenSize <= 0 || layers <= 0 || heads <= 0 || kvHeads <= 0 || intermediateSize <= 0 || maxPositions <= 0) {
            throw new IllegalArgumentException("every size must be positive: " + describe(hiddenSize, layers, heads, kvHeads,
                    intermediateSize, maxPositions));
        }
        if (hiddenSize % heads != 0 || heads % kvHeads != 0 || (hiddenSize / heads) % 2 != 0) {
            throw new IllegalArgumentException("hidden size must split into an even head size, and query heads into KV"
                    + " groups: " + describe(hiddenSize, layers, heads, kvHeads, intermediateSize, maxPositions));
        }
    }

    /**
     * The demo's and {@code bench ttft}'s model: width 256, 4 layers, 8 query heads over 2 KV heads,
     * 16,640 positions. An 8,192-token prefill takes seconds on two cores.
     */
    public static SyntheticLlama demo() {
        return new SyntheticLlama(256, 4, 8, 2, 768, 16_640, 42);
    }

    /**
     * {@code bench blend}'s model: the demo's width and heads, 12 layers, so that the layers a blend
     * always computes whole (0 and 1, with LMCache's check layer 1) are a sixth of the model, nearer a
     * real model's share (2 of 32 in an 8B Llama) than the demo's 4 layers would be (half).
     */
    public static SyntheticLlama blend() {
        return new SyntheticLlama(256, 12, 8, 2, 768, 16_640, 42);
    }

    /** A model small enough for tests: width 64, 2 layers, 4 query heads over 2 KV heads, 4,352 positions. */
    public static SyntheticLlama tiny() {
        return new SyntheticLlama(64, 2, 4, 2, 128, 4_352, 7);
    }

    /** Elements per head. */
    public int headSize() {
        return hiddenSize / heads;
    }

    /**
     * Writes the model into {@code dir} unless a model of exactly these parameters is there already
     * (a marker file names them). Files are written beside their final names and moved into place,
     * marker last, so an interrupted write is redone on the next call.
     *
     * @return {@code dir}
     */
    public Path writeTo(Path dir) throws IOException {
        Files.createDirectories(dir);
        Path marker = dir.resolve(MARKER);
        String identity = configJson();
        if (Files.exists(marker) && Files.readString(marker).equals(identity)
                && Files.exists(dir.resolve("model.safetensors")) && Files.exists(dir.resolve("tokenizer.json"))) {
            return dir;
        }
        Files.deleteIfExists(marker);
        write(dir, "config.json", identity.getBytes(StandardCharsets.UTF_8));
        write(dir, "tokenizer.json", tokenizerJson().getBytes(StandardCharsets.UTF_8));
        Path weights = dir.resolve("model.safetensors.partial");
        try (OutputStream out = Files.newOutputStream(weights)) {
            writeSafetensors(out);
        }
        Files.move(weights, dir.resolve("model.safetensors"), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        write(dir, MARKER, identity.getBytes(StandardCharsets.UTF_8));
        return dir;
    }

    private static void write(Path dir, String name, byte[] bytes) throws IOException {
        Path partial = dir.resolve(name + ".partial");
        Files.write(partial, bytes);
        Files.move(partial, dir.resolve(name), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** Hugging Face's {@code config.json} for a {@code LlamaForCausalLM}. */
    String configJson() {
        return String.format(Locale.ROOT, """
                {
                  "architectures": ["LlamaForCausalLM"],
                  "model_type": "llama",
                  "hidden_size": %d,
                  "intermediate_size": %d,
                  "num_attention_heads": %d,
                  "num_key_value_heads": %d,
                  "num_hidden_layers": %d,
                  "max_position_embeddings": %d,
                  "vocab_size": %d,
                  "rms_norm_eps": 1e-05,
                  "rope_theta": 10000.0,
                  "hidden_act": "silu",
                  "bos_token_id": 1,
                  "eos_token_id": 2,
                  "torch_dtype": "float32",
                  "tie_word_embeddings": false,
                  "lmcache4j_synthetic_seed": %d
                }
                """, hiddenSize, intermediateSize, heads, kvHeads, layers, maxPositions, VOCAB_SIZE, seed);
    }

    /**
     * A SentencePiece-style BPE {@code tokenizer.json} (Llama 2's shape): special tokens, byte
     * fallback tokens {@code <0x00>}…{@code <0xFF>}, the letters and {@code ▁}, and every pair of
     * them with its merge.
     */
    static String tokenizerJson() {
        Map<String, Integer> vocab = new LinkedHashMap<>();
        vocab.put("<unk>", 0);
        vocab.put("<s>", 1);
        vocab.put("</s>", 2);
        for (int b = 0; b < 256; b++) {
            vocab.put(String.format(Locale.ROOT, "<0x%02X>", b), vocab.size());
        }
        for (int i = 0; i < LETTERS.length(); i++) {
            vocab.put(String.valueOf(LETTERS.charAt(i)), vocab.size());
        }
        List<String> merges = new ArrayList<>();
        for (int i = 0; i < LETTERS.length(); i++) {
            for (int j = 0; j < LETTERS.length(); j++) {
                String a = String.valueOf(LETTERS.charAt(i));
                String b = String.valueOf(LETTERS.charAt(j));
                vocab.put(a + b, vocab.size());
                merges.add(a + " " + b);
            }
        }
        StringBuilder json = new StringBuilder(64 * 1024);
        json.append("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [\n");
        String[] specials = {"<unk>", "<s>", "</s>"};
        for (int i = 0; i < specials.length; i++) {
            json.append("    {\"id\": ").append(i).append(", \"content\": \"").append(specials[i])
                    .append("\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}")
                    .append(i < specials.length - 1 ? ",\n" : "\n");
        }
        json.append("  ],\n");
        json.append("  \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\u2581\"},"
                + " {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}]},\n");
        json.append("  \"pre_tokenizer\": null,\n");
        json.append("  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": \"<unk>\",\n"
                + "    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": true,\n"
                + "    \"byte_fallback\": true,\n    \"vocab\": {");
        boolean first = true;
        for (Map.Entry<String, Integer> e : vocab.entrySet()) {
            json.append(first ? "\n      \"" : ",\n      \"").append(e.getKey()).append("\": ").append(e.getValue());
            first = false;
        }
        json.append("\n    },\n    \"merges\": [");
        for (int i = 0; i < merges.size(); i++) {
            json.append(i == 0 ? "\n      \"" : ",\n      \"").append(merges.get(i)).append('"');
        }
        json.append("\n    ]\n  }\n}\n");
        if (vocab.size() != VOCAB_SIZE) {
            throw new IllegalStateException("vocabulary has " + vocab.size() + " tokens, expected " + VOCAB_SIZE);
        }
        return json.toString();
    }

    /** One weight tensor: its name, its shape, and the standard deviation of its values (0: all ones, a norm). */
    private record Weight(String name, int rows, int cols, float std) {
        long elements() {
            return (long) rows * cols;
        }
    }

    private List<Weight> weights() {
        int kv = kvHeads * headSize();
        // Initialisation as GPT-2/Llama papers do it (normal, 0.02), scaled down with width so the
        // residual stream stays well conditioned; norms are ones.
        float std = 0.02f;
        float outStd = (float) (std / Math.sqrt(2.0 * layers));
        List<Weight> w = new ArrayList<>();
        w.add(new Weight("model.embed_tokens.weight", VOCAB_SIZE, hiddenSize, 1.0f));
        for (int l = 0; l < layers; l++) {
            String p = "model.layers." + l + ".";
            w.add(new Weight(p + "input_layernorm.weight", 1, hiddenSize, 0f));
            w.add(new Weight(p + "self_attn.q_proj.weight", hiddenSize, hiddenSize, (float) (1 / Math.sqrt(hiddenSize))));
            w.add(new Weight(p + "self_attn.k_proj.weight", kv, hiddenSize, (float) (1 / Math.sqrt(hiddenSize))));
            w.add(new Weight(p + "self_attn.v_proj.weight", kv, hiddenSize, (float) (1 / Math.sqrt(hiddenSize))));
            w.add(new Weight(p + "self_attn.o_proj.weight", hiddenSize, hiddenSize, outStd * 10));
            w.add(new Weight(p + "post_attention_layernorm.weight", 1, hiddenSize, 0f));
            w.add(new Weight(p + "mlp.gate_proj.weight", intermediateSize, hiddenSize, (float) (1 / Math.sqrt(hiddenSize))));
            w.add(new Weight(p + "mlp.up_proj.weight", intermediateSize, hiddenSize, (float) (1 / Math.sqrt(hiddenSize))));
            w.add(new Weight(p + "mlp.down_proj.weight", hiddenSize, intermediateSize, outStd * 10));
        }
        w.add(new Weight("model.norm.weight", 1, hiddenSize, 0f));
        w.add(new Weight("lm_head.weight", VOCAB_SIZE, hiddenSize, (float) (1 / Math.sqrt(hiddenSize))));
        return w;
    }

    /** The safetensors file: an 8-byte little-endian header length, the JSON header, then the F32 data. */
    private void writeSafetensors(OutputStream out) throws IOException {
        List<Weight> weights = weights();
        StringBuilder header = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long offset = 0;
        for (Weight w : weights) {
            long bytes = w.elements() * Float.BYTES;
            String shape = w.rows() == 1 ? "[" + w.cols() + "]" : "[" + w.rows() + "," + w.cols() + "]";
            header.append(",\"").append(w.name()).append("\":{\"dtype\":\"F32\",\"shape\":").append(shape)
                    .append(",\"data_offsets\":[").append(offset).append(',').append(offset + bytes).append("]}");
            offset += bytes;
        }
        header.append('}');
        while ((header.length() + 8) % 8 != 0) {
            header.append(' '); // the data starts 8-byte aligned, as the format recommends
        }
        byte[] headerBytes = header.toString().getBytes(StandardCharsets.UTF_8);
        ByteBuffer length = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(headerBytes.length);
        out.write(length.array());
        out.write(headerBytes);
        SplittableRandom random = new SplittableRandom(seed);
        ByteBuffer buffer = ByteBuffer.allocate(64 * 1024).order(ByteOrder.LITTLE_ENDIAN);
        for (Weight w : weights) {
            for (long i = 0; i < w.elements(); i++) {
                float v = w.std() == 0f ? 1.0f : (float) (gaussian(random) * w.std());
                buffer.putFloat(v);
                if (!buffer.hasRemaining()) {
                    out.write(buffer.array(), 0, buffer.position());
                    buffer.clear();
                }
            }
        }
        out.write(buffer.array(), 0, buffer.position());
    }

    /** A standard normal value (Box-Muller), StrictMath: the same bits on every JVM for the same seed. */
    private static double gaussian(SplittableRandom random) {
        double u = 1.0 - random.nextDouble();
        double v = random.nextDouble();
        return StrictMath.sqrt(-2.0 * StrictMath.log(u)) * StrictMath.cos(2 * Math.PI * v);
    }

    private static String describe(int hidden, int layers, int heads, int kvHeads, int inter, int positions) {
        return "hidden " + hidden + ", " + layers + " layers, " + heads + " heads, " + kvHeads + " KV heads, MLP "
                + inter + ", " + positions + " positions";
    }
}
