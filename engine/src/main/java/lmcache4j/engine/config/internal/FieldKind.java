package lmcache4j.engine.config.internal;

import lmcache4j.engine.config.LMCacheEngineConfig;

/**
 * The value type of a config field, as in LMCache's definition table. Each kind fixes the Java
 * type a field's value has in {@link LMCacheEngineConfig} and how text (environment variables,
 * {@code --set}) and YAML values are converted to it.
 */
public enum FieldKind {
    /** {@link Boolean}; text: {@code true/false/1/0}, case-insensitive. */
    BOOL("a boolean (true, false, 1 or 0)"),
    /** {@link Integer}; text: a decimal integer. */
    INT("an integer"),
    /** {@link Double}; text: a decimal number. Sizes in GB are this kind. */
    DOUBLE("a number"),
    /** {@link String}, free-form. */
    STRING("a string"),
    /** {@link String} restricted to a field's allowed values (enum-like). */
    CHOICE("one of the allowed values"),
    /** {@code List<String>}; text: comma-separated. */
    STRING_LIST("a list of strings (comma-separated in text)"),
    /** {@code List<Integer>}; text: comma-separated. */
    INT_LIST("a list of integers (comma-separated in text)"),
    /** {@code List<Double>}; text: comma-separated. */
    DOUBLE_LIST("a list of numbers (comma-separated in text)"),
    /** {@code Map<String, Object>} of JSON values; text: a JSON object. */
    JSON_OBJECT("a JSON object (a YAML mapping in the file)");

    private final String expected;

    FieldKind(String expected) {
        this.expected = expected;
    }

    /** What a valid value of this kind looks like, for error messages. */
    public String expected() {
        return expected;
    }
}
