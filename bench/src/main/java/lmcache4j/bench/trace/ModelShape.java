package lmcache4j.bench.trace;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * How many bytes of KV cache one token takes in a model, to turn capacities in tokens into GB:
 * layers × KV heads × head size × 2 (K and V) × bytes per value. Named shapes are the common
 * models' published configurations; any other is given as a number of bytes per token.
 *
 * @param name          the shape's name, for reports
 * @param bytesPerToken KV bytes per token
 */
public record ModelShape(String name, long bytesPerToken) {
    private static final Map<String, ModelShape> NAMED = new LinkedHashMap<>();

    static {
        named("llama-3-8b", 32, 8, 128, 2);   // Llama-3(.1)-8B, bf16: 128 KiB per token
        named("llama-3-70b", 80, 8, 128, 2);  // Llama-3(.1)-70B, bf16: 320 KiB per token
        named("mistral-7b", 32, 8, 128, 2);   // Mistral-7B, bf16
        named("qwen2.5-7b", 28, 4, 128, 2);   // Qwen2.5-7B, bf16: 56 KiB per token
        named("qwen2.5-72b", 80, 8, 128, 2);  // Qwen2.5-72B, bf16
    }

    /** The default: Llama-3-8B in bf16, 128 KiB per token. */
    public static final ModelShape DEFAULT = NAMED.get("llama-3-8b");

    public ModelShape {
        if (bytesPerToken < 1) {
            throw new IllegalArgumentException("a model's KV takes at least 1 byte per token, was " + bytesPerToken);
        }
    }

    private static void named(String name, int layers, int kvHeads, int headSize, int bytesPerValue) {
        NAMED.put(name, new ModelShape(name, (long) layers * kvHeads * headSize * 2 * bytesPerValue));
    }

    /** The named shapes, for help texts. */
    public static Map<String, ModelShape> named() {
        return Map.copyOf(NAMED);
    }

    /**
     * A shape by name (case-insensitive: {@code llama-3-8b}, {@code llama-3-70b}, ...) or as a
     * number of bytes per token.
     *
     * @throws IllegalArgumentException naming the valid names
     */
    public static ModelShape parse(String value) {
        String v = value.strip().toLowerCase(Locale.ROOT);
        ModelShape named = NAMED.get(v);
        if (named != null) {
            return named;
        }
        try {
            return new ModelShape(v + " bytes/token", Long.parseLong(v));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("unknown model shape '" + value + "'; use one of "
                    + String.join(", ", NAMED.keySet()) + ", or the KV bytes per token as a number");
        }
    }

    /** Bytes of {@code tokens} tokens' KV. */
    public long bytes(long tokens) {
        return Math.multiplyExact(tokens, bytesPerToken);
    }
}
