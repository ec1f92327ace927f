package lmcache4j.bench.trace;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A cache capacity as an operator says it, resolved against a trace to whole blocks: {@code 5%}
 * (of the trace's distinct full blocks), {@code 5859b} (blocks), {@code 3000000t} or {@code 3Mt}
 * (tokens; k, M and G multiply by 10^3, 10^6, 10^9), {@code 0.8GB} or {@code 0.75GiB} (bytes of KV
 * for a model shape).
 *
 * @param text  the capacity as given
 * @param value the number
 * @param unit  its unit
 */
public record Capacity(String text, double value, Unit unit) {
    /** The units a capacity may be given in. */
    public enum Unit { PERCENT, BLOCKS, TOKENS, BYTES }

    /** The capacities {@code bench trace} sweeps by default: 1 % to 25 % of the distinct blocks, and Mooncake's 3M tokens. */
    public static final String DEFAULT_SWEEP = "1%,2%,3Mt,5%,10%,15%,20%,25%";

    /** Parses one capacity. */
    public static Capacity parse(String text) {
        String t = text.strip();
        String lower = t.toLowerCase(Locale.ROOT);
        try {
            if (lower.endsWith("%")) {
                return positive(t, Double.parseDouble(lower.substring(0, lower.length() - 1)), Unit.PERCENT);
            }
            if (lower.endsWith("gib")) {
                return positive(t, Double.parseDouble(lower.substring(0, lower.length() - 3)) * (1L << 30), Unit.BYTES);
            }
            if (lower.endsWith("gb")) {
                return positive(t, Double.parseDouble(lower.substring(0, lower.length() - 2)) * 1e9, Unit.BYTES);
            }
            if (lower.endsWith("b")) {
                return positive(t, Double.parseDouble(lower.substring(0, lower.length() - 1)), Unit.BLOCKS);
            }
            if (lower.endsWith("t")) {
                String n = t.substring(0, t.length() - 1);
                double scale = 1;
                char last = n.isEmpty() ? ' ' : n.charAt(n.length() - 1);
                switch (last) {
                    case 'k', 'K' -> scale = 1e3;
                    case 'M' -> scale = 1e6;
                    case 'G' -> scale = 1e9;
                    default -> { }
                }
                if (scale != 1) {
                    n = n.substring(0, n.length() - 1);
                }
                return positive(t, Double.parseDouble(n) * scale, Unit.TOKENS);
            }
        } catch (NumberFormatException e) {
            // falls through to the message below
        }
        throw new IllegalArgumentException("capacity '" + text + "' is not one of: N% (of the trace's distinct blocks), "
                + "Nb (blocks), Nt / NkT / NMt (tokens), NGB / NGiB (KV bytes of the model shape)");
    }

    /** Parses a comma-separated list. */
    public static List<Capacity> parseList(String list) {
        List<Capacity> out = new ArrayList<>();
        for (String part : list.split(",")) {
            if (!part.isBlank()) {
                out.add(parse(part));
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("no capacity in '" + list + "'");
        }
        return out;
    }

    private static Capacity positive(String text, double value, Unit unit) {
        if (!(value > 0) || Double.isInfinite(value)) {
            throw new IllegalArgumentException("capacity '" + text + "' must be positive");
        }
        return new Capacity(text, value, unit);
    }

    /** Whole blocks of {@code trace} (at least 1), converting bytes with {@code model}. */
    public int blocks(Trace trace, int distinctFullBlocks, ModelShape model) {
        double blocks = switch (unit) {
            case PERCENT -> value / 100 * distinctFullBlocks;
            case BLOCKS -> value;
            case TOKENS -> value / trace.blockTokens();
            case BYTES -> value / ((double) model.bytesPerToken() * trace.blockTokens());
        };
        if (blocks >= Integer.MAX_VALUE) {
            throw new IllegalArgumentException("capacity '" + text + "' is more blocks than a replay can hold");
        }
        return Math.max(1, (int) Math.round(unit == Unit.PERCENT ? blocks : Math.floor(blocks)));
    }
}
