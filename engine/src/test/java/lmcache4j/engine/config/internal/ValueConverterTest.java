package lmcache4j.engine.config.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** LMCache's {@code _parse_quoted_string}: trims, and unquotes with Python string-literal escapes. */
class ValueConverterTest {
    @ParameterizedTest(name = "[{0}] -> [{1}]")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
            "abc | abc",
            "`  abc  ` | abc",
            "\"abc\" | abc",
            "'abc' | abc",
            "`\" a b \"` | ` a b `",
            "\"a\\nb\" | `a\nb`",
            "'it\\'s' | it's",
            "\"\\x41\\u00e9\\101\" | Aé" + "A",
            "\"a\\db\" | a\\db",
            "\"a\"b\" | a\"b",
            "\"abc\\\" | abc\\",
            "\"abc' | \"abc'",
            "\" | \"",
            "`` | ``"})
    void stripQuotesFollowsLmcache(String raw, String expected) {
        assertEquals(expected, ValueConverter.stripQuotes(raw));
    }
}
