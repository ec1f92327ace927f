package lmcache4j.bench.json;

import java.util.Locale;

/**
 * Writes one flat JSON object, keys in insertion order, for the {@code --json} output of the CLI's
 * workloads. Numbers that are not finite are written as {@code null}.
 */
public final class FlatJson {
    private final StringBuilder sb = new StringBuilder("{");

    private FlatJson key(String key) {
        sb.append(sb.length() > 1 ? ", " : "").append(quote(key)).append(": ");
        return this;
    }

    /** A whole number. */
    public FlatJson integer(String key, long value) {
        key(key).sb.append(value);
        return this;
    }

    /** A number with {@code decimals} digits after the point. */
    public FlatJson number(String key, double value, int decimals) {
        key(key).sb.append(Double.isFinite(value) ? String.format(Locale.ROOT, "%." + decimals + "f", value) : "null");
        return this;
    }

    /** A whole number, or null when absent. */
    public FlatJson integer(String key, java.util.Optional<Long> value) {
        key(key).sb.append(value.map(String::valueOf).orElse("null"));
        return this;
    }

    /** A number with {@code decimals} digits after the point, or null when absent. */
    public FlatJson number(String key, java.util.Optional<Double> value, int decimals) {
        return number(key, value.orElse(Double.NaN), decimals);
    }

    /** A boolean, or null when absent. */
    public FlatJson bool(String key, java.util.Optional<Boolean> value) {
        key(key).sb.append(value.map(String::valueOf).orElse("null"));
        return this;
    }

    public FlatJson bool(String key, boolean value) {
        key(key).sb.append(value);
        return this;
    }

    public FlatJson string(String key, String value) {
        key(key).sb.append(quote(value));
        return this;
    }

    /** An array of numbers with {@code decimals} digits after the point. */
    public FlatJson numbers(String key, double[] values, int decimals) {
        key(key).sb.append('[');
        for (int i = 0; i < values.length; i++) {
            sb.append(i > 0 ? ", " : "").append(Double.isFinite(values[i])
                    ? String.format(Locale.ROOT, "%." + decimals + "f", values[i]) : "null");
        }
        sb.append(']');
        return this;
    }

    /** A value that is already JSON (a nested object). */
    public FlatJson raw(String key, String json) {
        key(key).sb.append(json);
        return this;
    }

    /** {@code s} as a JSON string literal. */
    public static String quote(String s) {
        StringBuilder q = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '"' -> q.append("\\\"");
                case '\\' -> q.append("\\\\");
                case '\n' -> q.append("\\n");
                case '\t' -> q.append("\\t");
                case '\r' -> q.append("\\r");
                default -> {
                    if (ch < 0x20) {
                        q.append(String.format(Locale.ROOT, "\\u%04x", (int) ch));
                    } else {
                        q.append(ch);
                    }
                }
            }
        }
        return q.append('"').toString();
    }

    @Override
    public String toString() {
        return sb + "}";
    }
}
