package lmcache4j.engine.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The project's JSON codec: what it accepts, and how it says what is wrong. */
class JsonTest {
    @Test
    void scalarsAndContainers() {
        assertEquals(Map.of(), Json.parse("{}"));
        assertEquals(List.of(), Json.parse(" [ ] "));
        assertEquals(0L, Json.parse("0"));
        assertEquals(-12L, Json.parse("-12"));
        assertEquals(Long.MAX_VALUE, Json.parse("9223372036854775807"));
        assertEquals(2.5, Json.parse("2.5"));
        assertEquals(-1.0e-3, Json.parse("-1E-3"));
        assertEquals(100.0, Json.parse("1e2"));
        assertEquals(true, Json.parse("true"));
        assertEquals(false, Json.parse("false"));
        assertNull(Json.parse("null"));
        assertEquals(Arrays.asList(1L, null, "x", List.of(), Map.of("k", false)),
                Json.parse("[1,null,\"x\",[],{\"k\":false}]"));
    }

    @Test
    void stringEscapes() {
        assertEquals("a\"b\\c/d\b\f\n\r\t\u00e9\u20ac", Json.parse("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\u20AC\""));
        assertEquals("\ud83d\ude00", Json.parse("\"\\ud83d\\ude00\"")); // surrogate pair stays a pair
        assertEquals("ключ", Json.parse("\"ключ\""));
    }

    @Test
    void objectsKeepTheirOrderAndAreImmutable() {
        Map<String, Object> m = Json.parseObject("{\"b\": 1, \"a\": {\"z\": [1, 2]}, \"c\": \"x\"}");
        assertEquals(List.of("b", "a", "c"), List.copyOf(m.keySet()));
        assertThrows(UnsupportedOperationException.class, () -> m.put("d", 1));
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
            "`` | expected a value, found the end of the text",
            "{ | expected a string key in double quotes, found the end of the text",
            "{\"a\" 1} | character 6: expected ':'",
            "{\"a\": 1,} | character 9: expected a string key in double quotes, found '}'",
            "[1, 2 | expected ',' or ']', found the end of the text",
            "[1 2] | character 4: expected ',' or ']'",
            "{\"a\": 1} x | character 10: expected end of text after the value",
            "{'a': 1} | expected a string key in double quotes, found ''a': 1}'",
            "{\"a\": 1, \"a\": 2} | no duplicate key, but \"a\" appears twice",
            "\"abc | expected a closing '\"'",
            "\"a\\qb\" | expected a valid escape",
            "\"\\u12\" | four hex digits after \\u",
            "tru | expected a value (object, array, string, number, true, false or null)",
            "NaN | expected a value",
            "01 | expected end of text after the value",
            "1. | expected a digit after '.'",
            "1e | expected a digit in the exponent",
            "- | expected a digit",
            "99999999999999999999 | an integer that fits in 64 bits",
            "18446744073709551616 | an integer that fits in 64 bits",
            "-9223372036854775809 | an integer that fits in 64 bits",
            "000000000000000000001 | expected end of text after the value",
            "1e999 | a finite number"})
    void malformedTextIsRefusedSayingWhereAndWhat(String text, String expected) {
        JsonException e = assertThrows(JsonException.class, () -> Json.parse(text));
        assertTrue(e.getMessage().startsWith("invalid JSON at character "), e.getMessage());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void integersFrom2To63UpTo2To64AreReadAsUnsignedBigIntegers() {
        // LMCache writes chunk keys >= 2^63 as unsigned numbers; a long cannot hold them as such.
        assertEquals(new BigInteger("9223372036854775808"), Json.parse("9223372036854775808"));
        assertEquals(new BigInteger("18446744073709551615"), Json.parse("18446744073709551615"));
        assertEquals(Long.MAX_VALUE, Json.parse("9223372036854775807"));
        assertEquals(Long.MIN_VALUE, Json.parse("-9223372036854775808"));
        assertEquals("[18446744073709551615]", Json.write(Json.parse("[18446744073709551615]")));
        assertEquals("a number", Json.typeName(Json.parse("18446744073709551615")));
    }

    @Test
    void longNumbersAreRefusedBeforeTheyAreConverted() {
        String longest = "-0." + "1".repeat(Json.MAX_NUMBER_CHARS - 7) + "e-10"; // exactly the limit
        assertEquals(Json.MAX_NUMBER_CHARS, longest.length());
        assertEquals(Double.parseDouble(longest), Json.parse(longest));
        // A million digits took 13.6 s of a core through BigDecimal; refused on length, it is a scan.
        for (String huge : List.of("1." + "7".repeat(1_000_000), "9".repeat(1_000_000), "1e" + "9".repeat(1_000_000),
                "-" + "1".repeat(40))) {
            long t0 = System.nanoTime();
            JsonException e = assertThrows(JsonException.class, () -> Json.parse("[" + huge + "]"));
            long millis = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(e.getMessage().contains("a number of at most 40 characters, not one of " + huge.length()),
                    e.getMessage());
            assertTrue(e.getMessage().length() < 200, "the message does not echo the literal: " + e.getMessage().length());
            assertTrue(millis < 1_000, "refused in " + millis + " ms");
        }
    }

    @Test
    void rawControlCharactersInStringsAreRefused() {
        JsonException e = assertThrows(JsonException.class, () -> Json.parse("\"a\nb\""));
        assertTrue(e.getMessage().contains("no raw control character"), e.getMessage());
    }

    @Test
    void nestingIsBounded() {
        String deep = "[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH);
        assertEquals(1, ((List<?>) Json.parse(deep)).size());
        JsonException e = assertThrows(JsonException.class,
                () -> Json.parse("[".repeat(Json.MAX_DEPTH + 1) + "]".repeat(Json.MAX_DEPTH + 1)));
        assertTrue(e.getMessage().contains("nesting no deeper than " + Json.MAX_DEPTH), e.getMessage());
    }

    @Test
    void parseObjectRefusesOtherValues() {
        JsonException e = assertThrows(JsonException.class, () -> Json.parseObject("[1]"));
        assertEquals("expected a JSON object ({...}), got an array", e.getMessage());
    }

    @Test
    void writeIsReadBack() {
        Object v = Json.parse("{\"s\": \"q\\\"\\\\\\n\\u0001\", \"n\": [1, -2.5, 1.0E20, true, null], \"o\": {}}");
        assertEquals(v, Json.parse(Json.write(v)));
        assertEquals("{\"a\": [1, 2.0], \"b\": null}", Json.write(Json.parse("{\"a\":[1,2.0],\"b\":null}")));
    }

    /** Times since the epoch as Python's json.dumps writes them (LMCache's API), not as 1.795815023922E9. */
    @Test
    void doublesAreWrittenAsPythonWritesThem() {
        assertEquals("[1795815023.922, 5.0, 0.0001, 0.1, -2.5, 1000000000000000.0, 1.0E16, 1.0E-5, 0.0]",
                Json.write(java.util.List.of(1.795815023922E9, 5.0, 1e-4, 0.1, -2.5, 1e15, 1e16, 1e-5, 0.0)));
        assertEquals(1.795815023922E9, ((Number) Json.parse(Json.write(1.795815023922E9))).doubleValue());
    }
}
