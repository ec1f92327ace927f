package lmcache4j.engine.config;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Predicate;

import lmcache4j.engine.json.Json;

/**
 * One {@code extra_config} key lmcache4j reads: its name, the type of value it takes, its default
 * and what it does. Declared once in {@link ExtraConfigKeys}; the loader checks values against the
 * declaration ({@link #problem}), so reading a loaded config's value ({@link #valueIn}) cannot fail.
 *
 * @param <T> the value's Java type
 */
public final class ExtraConfigKey<T> {
    private final String name;
    private final String expected;
    private final Predicate<Object> valid;
    private final Function<Object, T> convert;
    private final Optional<T> defaultValue;
    private final String description;

    private ExtraConfigKey(String name, String expected, Predicate<Object> valid, Function<Object, T> convert,
                           Optional<T> defaultValue, String description) {
        this.name = Objects.requireNonNull(name, "name");
        this.expected = expected;
        this.valid = valid;
        this.convert = convert;
        this.defaultValue = defaultValue;
        this.description = description;
    }

    /** A key whose value is {@code true} or {@code false}. */
    static ExtraConfigKey<Boolean> bool(String name, Optional<Boolean> defaultValue, String description) {
        return new ExtraConfigKey<>(name, "a boolean (true or false)", Boolean.class::isInstance, Boolean.class::cast,
                defaultValue, description);
    }

    /** A key whose value is a number of seconds above 0. */
    static ExtraConfigKey<Double> positiveSeconds(String name, double defaultValue, String description) {
        return new ExtraConfigKey<>(name, "a number of seconds > 0", v -> v instanceof Number n && n.doubleValue() > 0,
                v -> ((Number) v).doubleValue(), Optional.of(defaultValue), description);
    }

    /** A key whose value is a whole number from 1 up. */
    static ExtraConfigKey<Integer> positiveCount(String name, int defaultValue, String description) {
        return new ExtraConfigKey<>(name, "a whole number >= 1",
                v -> v instanceof Long n && n >= 1 && n <= Integer.MAX_VALUE, v -> ((Long) v).intValue(),
                Optional.of(defaultValue), description);
    }

    /** A key whose value is a whole number from {@code min} to {@code max}. */
    static ExtraConfigKey<Integer> countIn(String name, int min, int max, int defaultValue, String description) {
        return new ExtraConfigKey<>(name, "a whole number from " + min + " to " + max,
                v -> v instanceof Long n && n >= min && n <= max, v -> ((Long) v).intValue(), Optional.of(defaultValue),
                description);
    }

    /** A key whose value is one of {@code choices} (a string, as written). */
    static ExtraConfigKey<String> choice(String name, List<String> choices, String defaultValue, String description) {
        return new ExtraConfigKey<>(name, "one of " + choices, v -> v instanceof String t && choices.contains(t),
                String.class::cast, Optional.of(defaultValue), description);
    }

    /** A key whose value is a non-empty string; no default. */
    static ExtraConfigKey<String> text(String name, String description) {
        return new ExtraConfigKey<>(name, "a non-empty string", v -> v instanceof String t && !t.isEmpty(),
                String.class::cast, Optional.empty(), description);
    }

    /** A key whose value is a string, the empty string meaning unset (as LMCache's S3 credentials read); no default. */
    static ExtraConfigKey<String> textOrEmpty(String name, String description) {
        return new ExtraConfigKey<>(name, "a string", String.class::isInstance, String.class::cast, Optional.empty(),
                description);
    }

    /** A key whose value is a mapping, checked by the rule that reads it. */
    static ExtraConfigKey<Map<?, ?>> mapping(String name, String description) {
        return new ExtraConfigKey<>(name, "a mapping", v -> true, v -> (Map<?, ?>) v, Optional.empty(), description);
    }

    /** The key's name in {@code extra_config}. */
    public String name() {
        return name;
    }

    /** The value used when the key is absent; empty when absence means "decided elsewhere" (see the description). */
    public Optional<T> defaultValue() {
        return defaultValue;
    }

    /** What the key does, its default included. */
    public String description() {
        return description;
    }

    /** What is wrong with {@code value} for this key ("expected ..."), or empty when it is valid. */
    public Optional<String> problem(Object value) {
        return valid.test(value) ? Optional.empty() : Optional.of("expected " + expected);
    }

    /** The key's value in a loaded config's {@code extra_config}, if set. */
    public Optional<T> valueIn(Map<String, Object> extraConfig) {
        Object v = extraConfig.get(name);
        if (v == null) {
            return Optional.empty();
        }
        if (!valid.test(v)) { // a loaded config was checked; only a hand-made map gets here
            throw new ConfigException("extra_config." + name + " = " + Json.write(v) + " is not valid: expected " + expected);
        }
        return Optional.of(convert.apply(v));
    }

    /** The key's value in {@code extraConfig}, else its default. */
    public T valueOrDefault(Map<String, Object> extraConfig) {
        return valueIn(extraConfig).or(() -> defaultValue).orElseThrow(
                () -> new IllegalStateException("extra_config." + name + " has no default; read it with valueIn"));
    }

    @Override
    public String toString() {
        return "extra_config." + name;
    }
}
