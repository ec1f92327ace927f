package lmcache4j.engine.config.internal;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

import lmcache4j.engine.json.Json;
import lmcache4j.engine.json.JsonException;

/**
 * Converts raw values to a field's typed value: text (environment variables, {@code --set}) and
 * native values (YAML scalars, lists and mappings; Java objects passed in code). LMCache's
 * conversions (spec §6.8), with lmcache4j's stricter reading where LMCache silently guesses:
 * <ul>
 *   <li>booleans: {@code true/false/1/0} in any case (LMCache reads anything but true/1 as false,
 *       so a typo like {@code yes} or {@code ture} silently disabled the feature); YAML booleans;
 *   <li>integers must be whole numbers that fit in 32 bits (no {@code 256.0}, no {@code true});
 *   <li>numbers are plain decimals (no {@code NaN}, {@code Infinity}, hex or Java suffixes);
 *   <li>lists: comma-separated text, items trimmed, empty items dropped; native lists as they are;
 *       a single scalar is a one-item list (as LMCache's converters do);
 *   <li>{@code extra_config}: a JSON object in text, a mapping in YAML; a top-level key set to
 *       null is the same as a key left out;
 *   <li>for a nullable field, empty text (or YAML null) means "unset".
 * </ul>
 */
public final class ValueConverter {
    private static final Pattern INTEGER = Pattern.compile("[+-]?[0-9]+");
    private static final Pattern DECIMAL = Pattern.compile("[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?");

    private ValueConverter() {
    }

    /**
     * LMCache's {@code _parse_quoted_string}: trims, and if the value is wrapped in matching single
     * or double quotes, removes them and resolves Python string escapes.
     */
    public static String stripQuotes(String value) {
        String v = value.strip();
        if (v.length() < 2) {
            return v;
        }
        char q = v.charAt(0);
        if ((q != '"' && q != '\'') || v.charAt(v.length() - 1) != q) {
            return v;
        }
        Optional<String> literal = pythonLiteral(v.substring(1, v.length() - 1), q);
        // Like LMCache: if the quoted text is not a valid Python literal, just drop the quotes.
        return literal.orElse(v.substring(1, v.length() - 1));
    }

    /** Resolves Python escapes in the body of a {@code q}-quoted literal; empty if not a valid literal. */
    private static Optional<String> pythonLiteral(String body, char q) {
        StringBuilder sb = new StringBuilder(body.length());
        for (int i = 0; i < body.length(); i++) {
            char c = body.charAt(i);
            if (c == q) {
                return Optional.empty(); // an unescaped quote ends the literal early
            }
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            if (i + 1 >= body.length()) {
                return Optional.empty(); // the backslash escapes the closing quote
            }
            char e = body.charAt(++i);
            switch (e) {
                case '\\', '\'', '"' -> sb.append(e);
                case 'n' -> sb.append('\n');
                case 't' -> sb.append('\t');
                case 'r' -> sb.append('\r');
                case 'a' -> sb.append('\u0007');
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'v' -> sb.append('\u000b');
                case '\n' -> { } // line continuation
                case 'x', 'u', 'U' -> {
                    int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    String hex = body.substring(i + 1, Math.min(body.length(), i + 1 + digits));
                    if (hex.length() != digits || !hex.chars().allMatch(ch -> Character.digit(ch, 16) >= 0)) {
                        return Optional.empty();
                    }
                    int cp = Integer.parseInt(hex, 16);
                    if (!Character.isValidCodePoint(cp)) {
                        return Optional.empty();
                    }
                    sb.appendCodePoint(cp);
                    i += digits;
                }
                default -> {
                    if (e >= '0' && e <= '7') {
                        int end = i;
                        while (end < body.length() && end < i + 3 && body.charAt(end) >= '0' && body.charAt(end) <= '7') {
                            end++;
                        }
                        sb.append((char) Integer.parseInt(body.substring(i, end), 8));
                        i = end - 1;
                    } else {
                        sb.append('\\').append(e); // Python keeps unknown escapes as written
                    }
                }
            }
        }
        return Optional.of(sb.toString());
    }

    /**
     * Converts text (already unquoted) to {@code field}'s typed value; {@code null} means unset.
     *
     * @throws BadValueException saying what is valid
     */
    public static Object fromText(ConfigField field, String text) {
        Object typed = switch (field.kind()) {
            case BOOL -> parseBool(field, text);
            case INT -> parseInt(field, text);
            case DOUBLE -> parseDouble(field, text);
            case STRING, CHOICE -> {
                String s = field.kind() == FieldKind.CHOICE ? text.strip() : text;
                yield field.isNullable() && field.normalizeText(s).isBlank() ? null : s;
            }
            case STRING_LIST, INT_LIST, DOUBLE_LIST -> {
                List<Object> items = new ArrayList<>();
                for (String part : text.split(",", -1)) {
                    String p = part.strip();
                    if (!p.isEmpty()) {
                        items.add(element(field, p));
                    }
                }
                yield List.copyOf(items);
            }
            case JSON_OBJECT -> text.isBlank() ? null : jsonObject(parseJsonObject(text));
        };
        return typed == null ? null : field.accept(typed);
    }

    /**
     * Converts a native value (YAML or Java) to {@code field}'s typed value; {@code null} or an
     * empty {@link Optional} means unset. Strings go through {@link #fromText}, as LMCache applies
     * its converters to file values too.
     *
     * @throws BadValueException saying what is valid
     */
    public static Object fromNative(ConfigField field, Object value) {
        Object v = value instanceof Optional<?> o ? o.orElse(null) : value;
        if (v == null) {
            if (field.isNullable() || field.kind() == FieldKind.JSON_OBJECT) {
                return null;
            }
            throw new BadValueException("expected " + field.expected() + "; this field cannot be null");
        }
        if (v instanceof String s) {
            return fromText(field, s);
        }
        Object typed = switch (field.kind()) {
            case BOOL -> nativeBool(field, v);
            case INT -> nativeInt(field, v);
            case DOUBLE -> nativeDouble(field, v);
            case STRING, CHOICE -> nativeString(field, v);
            case STRING_LIST, INT_LIST, DOUBLE_LIST -> {
                if (!(v instanceof Collection<?> c)) {
                    yield List.of(nativeElement(field, v));
                }
                List<Object> items = new ArrayList<>(c.size());
                for (Object e : c) {
                    if (e == null) {
                        throw new BadValueException("expected " + field.expected() + "; a list item cannot be null");
                    }
                    items.add(e instanceof String s ? element(field, s.strip()) : nativeElement(field, e));
                }
                yield List.copyOf(items);
            }
            case JSON_OBJECT -> {
                if (!(v instanceof Map<?, ?> m)) {
                    throw new BadValueException("expected " + field.expected() + ", got " + Json.typeName(v));
                }
                yield jsonObject(m);
            }
        };
        return field.accept(typed);
    }

    private static Object element(ConfigField field, String text) {
        return switch (field.kind()) {
            case INT_LIST -> parseInt(field, text);
            case DOUBLE_LIST -> parseDouble(field, text);
            default -> text;
        };
    }

    private static Object nativeElement(ConfigField field, Object v) {
        return switch (field.kind()) {
            case INT_LIST -> nativeInt(field, v);
            case DOUBLE_LIST -> nativeDouble(field, v);
            default -> nativeString(field, v);
        };
    }

    private static boolean parseBool(ConfigField field, String text) {
        return switch (text.strip().toLowerCase(Locale.ROOT)) {
            case "true", "1" -> true;
            case "false", "0" -> false;
            default -> throw new BadValueException("expected " + field.expected()
                    + "; lmcache4j accepts no other spelling, so a typo cannot silently turn a switch off");
        };
    }

    private static int parseInt(ConfigField field, String text) {
        String t = text.strip();
        if (!INTEGER.matcher(t).matches()) {
            throw new BadValueException("expected " + field.expected());
        }
        try {
            return Integer.parseInt(t);
        } catch (NumberFormatException e) {
            throw new BadValueException("expected " + field.expected() + " that fits in 32 bits");
        }
    }

    private static double parseDouble(ConfigField field, String text) {
        String t = text.strip();
        if (!DECIMAL.matcher(t).matches()) {
            throw new BadValueException("expected " + field.expected());
        }
        double d = Double.parseDouble(t);
        if (!Double.isFinite(d)) {
            throw new BadValueException("expected " + field.expected() + " (finite)");
        }
        return d;
    }

    private static boolean nativeBool(ConfigField field, Object v) {
        if (v instanceof Boolean b) {
            return b;
        }
        if (isIntegral(v)) {
            long l = ((Number) v).longValue();
            if (l == 0 || l == 1) {
                return l == 1;
            }
        }
        throw new BadValueException("expected " + field.expected() + ", got " + describe(v));
    }

    private static int nativeInt(ConfigField field, Object v) {
        if (isIntegral(v)) {
            BigInteger b = v instanceof BigInteger bi ? bi : BigInteger.valueOf(((Number) v).longValue());
            if (b.bitLength() < 32) {
                return b.intValue();
            }
            throw new BadValueException("expected " + field.expected() + " that fits in 32 bits, got " + v);
        }
        throw new BadValueException("expected " + field.expected() + ", got " + describe(v));
    }

    private static double nativeDouble(ConfigField field, Object v) {
        if (v instanceof Number n && !(v instanceof Boolean)) {
            double d = n.doubleValue();
            if (Double.isFinite(d)) {
                return d;
            }
        }
        throw new BadValueException("expected " + field.expected() + ", got " + describe(v));
    }

    private static String nativeString(ConfigField field, Object v) {
        // YAML reads `hash_seed: 0` as an integer; LMCache would str() it, so do the same for
        // whole numbers. Booleans and fractions are more likely mistakes than intended text.
        if (isIntegral(v)) {
            return v.toString();
        }
        if (v instanceof Path p) {
            return p.toString();
        }
        throw new BadValueException("expected " + field.expected() + ", got " + describe(v));
    }

    private static boolean isIntegral(Object v) {
        return v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
                || v instanceof BigInteger;
    }

    private static String describe(Object v) {
        return Json.typeName(v) + " " + Json.write(v);
    }

    /**
     * Normalises a mapping to extra_config's JSON form: string keys (YAML integer keys such as GPU
     * indices become their decimal text), {@link Long} integers, {@link Double} fractions,
     * unmodifiable maps and lists; top-level nulls dropped.
     */
    public static Map<String, Object> jsonObject(Map<?, ?> map) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            String key = jsonKey(e.getKey());
            if (e.getValue() == null) {
                continue; // a key set to null is the same as a key left out
            }
            if (out.containsKey(key)) {
                throw new BadValueException("extra_config key '" + key + "' appears twice");
            }
            out.put(key, jsonValue(key, e.getValue()));
        }
        return Collections.unmodifiableMap(out);
    }

    private static String jsonKey(Object key) {
        if (key instanceof String s) {
            return s;
        }
        if (isIntegral(key)) {
            return key.toString();
        }
        throw new BadValueException("extra_config keys must be strings or integers, got " + describe(key));
    }

    private static Object jsonValue(String path, Object v) {
        return switch (v) {
            case null -> throw new BadValueException("extra_config." + path
                    + " contains a null inside a list or mapping; only a top-level key may be null (meaning unset)");
            case String s -> s;
            case Boolean b -> b;
            case Integer i -> (long) i;
            case Long l -> l;
            case Short s -> (long) s;
            case Byte b -> (long) b;
            case BigInteger b when b.bitLength() < 64 -> b.longValue();
            case Float f when Float.isFinite(f) -> (double) f;
            case Double d when Double.isFinite(d) -> d;
            case BigDecimal d when Double.isFinite(d.doubleValue()) -> d.doubleValue();
            case Map<?, ?> m -> {
                Map<String, Object> out = new LinkedHashMap<>();
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    String key = jsonKey(e.getKey());
                    if (out.put(key, jsonValue(path + "." + key, e.getValue())) != null) {
                        throw new BadValueException("extra_config." + path + " has key '" + key + "' twice");
                    }
                }
                yield Collections.unmodifiableMap(out);
            }
            case Collection<?> c -> {
                List<Object> out = new ArrayList<>(c.size());
                for (Object e : c) {
                    out.add(jsonValue(path + "[]", e));
                }
                yield Collections.unmodifiableList(out);
            }
            default -> throw new BadValueException("extra_config." + path + " is " + v.getClass().getSimpleName()
                    + " " + v + "; extra_config values must be JSON values (string, number, boolean, list, mapping)");
        };
    }

    private static Map<String, Object> parseJsonObject(String text) {
        try {
            return Json.parseObject(text);
        } catch (JsonException e) {
            throw new BadValueException(e.getMessage());
        }
    }
}
