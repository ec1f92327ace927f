package lmcache4j.engine.json;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * lmcache4j's one JSON codec (RFC 8259): the config's {@code extra_config}, the commands'
 * {@code --json} reports and the tests' golden files all go through it. Reading, objects become
 * unmodifiable insertion-ordered {@code Map<String, Object>}, arrays unmodifiable {@code List},
 * integers {@link Long} (an integer in [2^63, 2^64), an unsigned 64-bit value as msgpack and
 * LMCache write chunk keys, a {@link BigInteger}), other numbers {@link Double}, {@code null} Java
 * {@code null}.
 *
 * <p>Hand-written rather than a dependency because the project needs only this much, and the
 * error messages can say exactly where the text went wrong. Stricter than Python's {@code json}:
 * no {@code NaN}/{@code Infinity}, no duplicate keys, no trailing text, nesting at most
 * {@value #MAX_DEPTH} deep, numbers at most {@value #MAX_NUMBER_CHARS} characters long (the longest
 * a double or a 64-bit integer needs is 24; a longer literal is refused before it is converted,
 * since converting 10^6 digits costs seconds of a core).
 */
public final class Json {
    /** The deepest nesting of objects and arrays {@link #parse} accepts. */
    public static final int MAX_DEPTH = 64;
    /** The longest number literal {@link #parse} accepts, sign, point and exponent included. */
    public static final int MAX_NUMBER_CHARS = 40;

    private final String text;
    private int pos;

    private Json(String text) {
        this.text = text;
    }

    /**
     * Parses one JSON value covering all of {@code text} (surrounding whitespace allowed).
     *
     * @throws JsonException saying where and what was expected
     */
    public static Object parse(String text) {
        Json p = new Json(text);
        p.skipWhitespace();
        Object v = p.value(0);
        p.skipWhitespace();
        if (p.pos != text.length()) {
            throw p.error("end of text after the value");
        }
        return v;
    }

    /** Parses {@code text} as a JSON object. */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> parseObject(String text) {
        Object v = parse(text);
        if (!(v instanceof Map)) {
            throw new JsonException("expected a JSON object ({...}), got " + typeName(v));
        }
        return (Map<String, Object>) v;
    }

    /** What a parsed value is, in words for messages: {@code "an object"}, {@code "a number"}, ... */
    public static String typeName(Object v) {
        return switch (v) {
            case null -> "null";
            case Map<?, ?> m -> "an object";
            case List<?> l -> "an array";
            case String s -> "a string";
            case Boolean b -> "a boolean";
            case Number n -> "a number";
            default -> v.getClass().getSimpleName();
        };
    }

    private Object value(int depth) {
        if (pos >= text.length()) {
            throw error("a value");
        }
        char c = text.charAt(pos);
        return switch (c) {
            case '{' -> object(depth + 1);
            case '[' -> array(depth + 1);
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) {
                    yield number();
                }
                throw error("a value (object, array, string, number, true, false or null)");
            }
        };
    }

    private Map<String, Object> object(int depth) {
        checkDepth(depth);
        pos++; // '{'
        Map<String, Object> map = new LinkedHashMap<>();
        skipWhitespace();
        if (peek() == '}') {
            pos++;
            return Collections.unmodifiableMap(map);
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') {
                throw error("a string key in double quotes");
            }
            int keyAt = pos;
            String key = string();
            if (map.containsKey(key)) {
                pos = keyAt;
                throw error("no duplicate key, but \"" + key + "\" appears twice");
            }
            skipWhitespace();
            expect(':');
            skipWhitespace();
            map.put(key, value(depth));
            skipWhitespace();
            char c = peek();
            if (c == ',') {
                pos++;
            } else if (c == '}') {
                pos++;
                return Collections.unmodifiableMap(map);
            } else {
                throw error("',' or '}'");
            }
        }
    }

    private List<Object> array(int depth) {
        checkDepth(depth);
        pos++; // '['
        List<Object> list = new ArrayList<>();
        skipWhitespace();
        if (peek() == ']') {
            pos++;
            return Collections.unmodifiableList(list);
        }
        while (true) {
            skipWhitespace();
            list.add(value(depth));
            skipWhitespace();
            char c = peek();
            if (c == ',') {
                pos++;
            } else if (c == ']') {
                pos++;
                return Collections.unmodifiableList(list);
            } else {
                throw error("',' or ']'");
            }
        }
    }

    private String string() {
        pos++; // opening quote
        StringBuilder sb = new StringBuilder();
        while (true) {
            if (pos >= text.length()) {
                throw error("a closing '\"'");
            }
            char c = text.charAt(pos++);
            if (c == '"') {
                return sb.toString();
            }
            if (c < 0x20) {
                pos--;
                throw error("no raw control character inside a string (escape it)");
            }
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            if (pos >= text.length()) {
                throw error("an escape character after '\\'");
            }
            char e = text.charAt(pos++);
            switch (e) {
                case '"' -> sb.append('"');
                case '\\' -> sb.append('\\');
                case '/' -> sb.append('/');
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                case 'u' -> {
                    if (pos + 4 > text.length()) {
                        throw error("four hex digits after \\u");
                    }
                    int cp = 0;
                    for (int i = 0; i < 4; i++) {
                        int d = Character.digit(text.charAt(pos), 16);
                        if (d < 0) {
                            throw error("four hex digits after \\u");
                        }
                        cp = cp * 16 + d;
                        pos++;
                    }
                    sb.append((char) cp);
                }
                default -> {
                    pos -= 2;
                    throw error("a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
                }
            }
        }
    }

    private Number number() {
        int start = pos;
        if (peek() == '-') {
            pos++;
        }
        if (peek() == '0') {
            pos++;
        } else if (isDigit(peek())) {
            while (isDigit(peek())) {
                pos++;
            }
        } else {
            throw error("a digit");
        }
        boolean integral = true;
        if (peek() == '.') {
            integral = false;
            pos++;
            if (!isDigit(peek())) {
                throw error("a digit after '.'");
            }
            while (isDigit(peek())) {
                pos++;
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            pos++;
            if (peek() == '+' || peek() == '-') {
                pos++;
            }
            if (!isDigit(peek())) {
                throw error("a digit in the exponent");
            }
            while (isDigit(peek())) {
                pos++;
            }
        }
        if (pos - start > MAX_NUMBER_CHARS) {
            int length = pos - start;
            pos = start;
            throw error("a number of at most " + MAX_NUMBER_CHARS + " characters, not one of " + length);
        }
        String literal = text.substring(start, pos);
        if (integral) {
            try {
                return Long.parseLong(literal);
            } catch (NumberFormatException e) {
                // Tried only for literals of at most 20 characters: a client cannot make it cost more.
                if (literal.length() <= 20 && literal.charAt(0) != '-') {
                    BigInteger unsigned = new BigInteger(literal);
                    if (unsigned.bitLength() <= 64) {
                        return unsigned;
                    }
                }
                pos = start;
                throw error("an integer that fits in 64 bits (signed, or unsigned up to 2^64-1), not " + literal);
            }
        }
        double d = new BigDecimal(literal).doubleValue();
        if (!Double.isFinite(d)) {
            pos = start;
            throw error("a finite number, not " + literal);
        }
        return d;
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, pos)) {
            throw error("a value (object, array, string, number, true, false or null)");
        }
        pos += word.length();
        return value;
    }

    private void checkDepth(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nesting no deeper than " + MAX_DEPTH);
        }
    }

    private void expect(char c) {
        if (peek() != c) {
            throw error("'" + c + "'");
        }
        pos++;
    }

    private char peek() {
        return pos < text.length() ? text.charAt(pos) : '\0';
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private void skipWhitespace() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private JsonException error(String expected) {
        String found = pos >= text.length() ? "the end of the text"
                : "'" + text.substring(pos, Math.min(text.length(), pos + 12)) + "'";
        return new JsonException("invalid JSON at character " + (pos + 1) + ": expected " + expected
                + ", found " + found);
    }

    /**
     * Writes {@code value} (as produced by {@link #parse}, or any String/Number/Boolean/List/Map)
     * as JSON on one line, {@code ", "} between members and {@code ": "} after keys; a number that
     * is not finite is written as {@code null}.
     */
    public static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(value, sb);
        return sb.toString();
    }

    private static void write(Object value, StringBuilder sb) {
        switch (value) {
            case null -> sb.append("null");
            case String s -> quote(s, sb);
            case Boolean b -> sb.append(b);
            case Double d -> sb.append(Double.isFinite(d) ? decimal(d) : "null");
            case Float f -> sb.append(Float.isFinite(f) ? decimal(Double.parseDouble(f.toString())) : "null");
            case BigDecimal d -> sb.append(d.toPlainString()); // fixed(): exactly its decimals, never an exponent
            case Number n -> sb.append(n);
            case Map<?, ?> m -> {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (!first) {
                        sb.append(", ");
                    }
                    first = false;
                    quote(String.valueOf(e.getKey()), sb);
                    sb.append(": ");
                    write(e.getValue(), sb);
                }
                sb.append('}');
            }
            case List<?> l -> {
                sb.append('[');
                for (int i = 0; i < l.size(); i++) {
                    if (i > 0) {
                        sb.append(", ");
                    }
                    write(l.get(i), sb);
                }
                sb.append(']');
            }
            default -> quote(value.toString(), sb);
        }
    }

    /**
     * A finite double as Python's {@code json.dumps} writes it (its {@code repr}): the shortest digits
     * that read back to it, positionally from 1e-4 up to 1e16 ({@code 1795815023.922}, {@code 5.0},
     * {@code 0.0001}), where Java's {@code toString} already switches to {@code 1.795815023922E9}.
     * Outside that range Java's form, valid JSON too.
     */
    static String decimal(double d) {
        double a = Math.abs(d);
        if (a == 0 || a < 1e-4 || a >= 1e16) {
            return Double.toString(d);
        }
        String plain = new BigDecimal(Double.toString(d)).stripTrailingZeros().toPlainString();
        return plain.indexOf('.') >= 0 ? plain : plain + ".0";
    }

    /**
     * {@code value} rounded to {@code decimals} digits after the point, to put in a map for
     * {@link #write} ({@code fixed(2.5, 3)} writes {@code 2.500}); null (written {@code null}) when
     * {@code value} is not finite.
     */
    public static Number fixed(double value, int decimals) {
        return Double.isFinite(value) ? BigDecimal.valueOf(value).setScale(decimals, RoundingMode.HALF_UP) : null;
    }

    private static void quote(String s, StringBuilder sb) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append("\\u00").append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 15, 16));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
