package lmcache4j.engine.config.internal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

/**
 * One row of the field table: a config knob's name (the YAML key; the environment variable is
 * {@code LMCACHE_} + the upper-cased name), its {@link FieldKind}, default, description and what
 * values are valid. Rows are built once in {@link ConfigSchema#lmcache4j()}.
 */
public final class ConfigField {
    private final String name;
    private final FieldKind kind;
    private final boolean nullable;
    private final Object defaultValue;
    private final String description;
    private final boolean lmcache4jOnly;
    private final List<String> allowed;
    private final boolean caseInsensitive;
    private final boolean upperCase;
    private final Map<String, String> valueAliases;
    private final Map<String, String> rejected;
    private final UnaryOperator<String> textNormalizer;
    private final Range range;
    private final Predicate<Object> check;
    private final String checkText;

    private ConfigField(Builder b) {
        this.name = b.name;
        this.kind = b.kind;
        this.nullable = b.nullable;
        this.description = Objects.requireNonNull(b.description, "description of " + b.name);
        this.lmcache4jOnly = b.lmcache4jOnly;
        this.allowed = List.copyOf(b.allowed);
        this.caseInsensitive = b.caseInsensitive;
        this.upperCase = b.upperCase;
        this.valueAliases = Map.copyOf(b.valueAliases);
        this.rejected = Map.copyOf(b.rejected);
        this.textNormalizer = b.textNormalizer;
        this.range = b.range;
        this.check = b.check;
        this.checkText = b.checkText;
        if (kind == FieldKind.CHOICE && allowed.isEmpty()) {
            throw new IllegalStateException(name + ": a CHOICE field needs allowed values");
        }
        // The default goes through the same validation as any value, so a bad table row fails at
        // class initialisation instead of at some user's start-up.
        this.defaultValue = b.defaultValue == null ? null : accept(b.defaultValue);
        if (defaultValue == null && !nullable && kind != FieldKind.JSON_OBJECT) {
            throw new IllegalStateException(name + ": a non-nullable field needs a default");
        }
    }

    public static Builder define(String name, FieldKind kind) {
        return new Builder(name, kind);
    }

    /** The field's name: the YAML key and, upper-cased after {@code LMCACHE_}, the env variable. */
    public String name() {
        return name;
    }

    /** The environment variable that sets this field: {@code LMCACHE_<NAME>}. */
    public String envVar() {
        return envVarOf(name);
    }

    public static String envVarOf(String name) {
        return "LMCACHE_" + name.toUpperCase(Locale.ROOT);
    }

    /** The value type. */
    public FieldKind kind() {
        return kind;
    }

    /** Whether "unset" ({@code null} in YAML, empty text) is a valid value. */
    public boolean isNullable() {
        return nullable;
    }

    /** The default; empty for a nullable field whose default is unset. */
    public Optional<Object> defaultValue() {
        return Optional.ofNullable(defaultValue);
    }

    public Object defaultOrNull() {
        return defaultValue;
    }

    /** What the field does (lmcache4j-only fields say so). */
    public String description() {
        return description;
    }

    /** True for fields LMCache does not have. */
    public boolean isLmcache4jOnly() {
        return lmcache4jOnly;
    }

    /** The allowed values of a {@link FieldKind#CHOICE} field, in their normalized spelling. */
    public List<String> allowedValues() {
        return allowed;
    }

    /** What a valid value is, in words, for error messages and the CLI. */
    public String expected() {
        StringBuilder sb = new StringBuilder();
        if (kind == FieldKind.CHOICE) {
            sb.append("one of ").append(String.join(", ", allowed));
            if (caseInsensitive) {
                sb.append(" (case-insensitive)");
            }
        } else {
            sb.append(kind.expected());
        }
        if (range != null) {
            sb.append(' ').append(range.describe());
        }
        if (checkText != null) {
            sb.append(", ").append(checkText);
        }
        if (nullable) {
            sb.append(", or null/empty for none");
        }
        return sb.toString();
    }

    /** Applies text normalisation (for example stripping {@code file://}) before typing. */
    public String normalizeText(String text) {
        return textNormalizer == null ? text : textNormalizer.apply(text);
    }

    /**
     * Validates and normalises an already-typed value: choice spelling, value aliases, rejected
     * values with their reasons, ranges and custom checks.
     *
     * @throws BadValueException saying what is valid
     */
    public Object accept(Object typed) {
        Object v = typed;
        if (v instanceof String s) {
            s = normalizeText(s);
            String key = caseInsensitive ? s.toLowerCase(Locale.ROOT) : s;
            String why = rejected.get(key);
            if (why != null) {
                throw new BadValueException(why);
            }
            String target = valueAliases.get(key);
            if (target != null) {
                s = target;
            } else if (kind == FieldKind.CHOICE && caseInsensitive) {
                s = upperCase ? s.toUpperCase(Locale.ROOT) : s.toLowerCase(Locale.ROOT);
            }
            if (kind == FieldKind.CHOICE && !allowed.contains(s)) {
                throw new BadValueException("expected " + expected());
            }
            v = s;
        }
        if (range != null) {
            if (v instanceof List<?> list) {
                for (Object e : list) {
                    range.check(((Number) e).doubleValue(), this);
                }
            } else {
                range.check(((Number) v).doubleValue(), this);
            }
        }
        if (check != null && !check.test(v)) {
            throw new BadValueException("expected " + expected());
        }
        return v;
    }

    @Override
    public String toString() {
        return name + " (" + kind + ")";
    }

    /** An inclusive or exclusive numeric bound on each side. */
    private record Range(Double lo, boolean loInclusive, Double hi, boolean hiInclusive) {
        void check(double v, ConfigField f) {
            boolean ok = Double.isFinite(v)
                    && (lo == null || (loInclusive ? v >= lo : v > lo))
                    && (hi == null || (hiInclusive ? v <= hi : v < hi));
            if (!ok) {
                throw new BadValueException("expected " + f.expected());
            }
        }

        String describe() {
            if (lo != null && hi != null) {
                return "in " + (loInclusive ? "[" : "(") + fmt(lo) + ", " + fmt(hi) + (hiInclusive ? "]" : ")");
            }
            if (lo != null) {
                return (loInclusive ? ">= " : "> ") + fmt(lo);
            }
            return (hiInclusive ? "<= " : "< ") + fmt(hi);
        }

        private static String fmt(double d) {
            return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
        }
    }

    /** Fluent construction of a table row. */
    public static final class Builder {
        private final String name;
        private final FieldKind kind;
        private boolean nullable;
        private Object defaultValue;
        private String description;
        private boolean lmcache4jOnly;
        private final List<String> allowed = new ArrayList<>();
        private boolean caseInsensitive;
        private boolean upperCase;
        private final Map<String, String> valueAliases = new LinkedHashMap<>();
        private final Map<String, String> rejected = new LinkedHashMap<>();
        private UnaryOperator<String> textNormalizer;
        private Range range;
        private Predicate<Object> check;
        private String checkText;

        private Builder(String name, FieldKind kind) {
            this.name = name;
            this.kind = kind;
        }

        public Builder defaultValue(Object value) {
            this.defaultValue = value;
            return this;
        }

        public Builder nullable() {
            this.nullable = true;
            return this;
        }

        public Builder description(String text) {
            this.description = text;
            return this;
        }

        /** Marks a field LMCache does not have; its description says so too. */
        public Builder lmcache4jOnly() {
            this.lmcache4jOnly = true;
            return this;
        }

        public Builder allowed(String... values) {
            allowed.addAll(List.of(values));
            return this;
        }

        /** Accepts any case; stores the upper-case ({@code upper}) or lower-case spelling. */
        public Builder caseInsensitive(boolean upper) {
            this.caseInsensitive = true;
            this.upperCase = upper;
            return this;
        }

        /** {@code alias} (case-insensitively when the field is) means {@code target}. */
        public Builder valueAlias(String alias, String target) {
            valueAliases.put(alias, target);
            return this;
        }

        /** {@code value} is refused with {@code why}, which should say what to use instead. */
        public Builder rejects(String value, String why) {
            rejected.put(value, why);
            return this;
        }

        public Builder normalizeText(UnaryOperator<String> normalizer) {
            this.textNormalizer = normalizer;
            return this;
        }

        public Builder greaterThan(double lo) {
            return range(lo, false, null, false);
        }

        public Builder atLeast(double lo) {
            return range(lo, true, null, false);
        }

        public Builder range(Double lo, boolean loInclusive, Double hi, boolean hiInclusive) {
            this.range = new Range(lo, loInclusive, hi, hiInclusive);
            return this;
        }

        public Builder check(Predicate<Object> predicate, String text) {
            this.check = predicate;
            this.checkText = text;
            return this;
        }

        public ConfigField build() {
            return new ConfigField(this);
        }
    }
}
