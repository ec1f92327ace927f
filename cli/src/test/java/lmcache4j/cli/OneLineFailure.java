package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

/** The shape every failing command's output must have. */
final class OneLineFailure {
    private OneLineFailure() {
    }

    /**
     * The exit status is {@code exit}, stdout is empty, and stderr is one readable line starting
     * with {@code lmcache4j }: no stack trace, no raw control character.
     */
    static void assertThat(String what, int actualExit, String out, String err, int exit) {
        assertEquals(exit, actualExit, what + ": " + err);
        assertEquals("", out, what);
        List<String> lines = err.lines().filter(l -> !l.isBlank()).toList();
        assertEquals(1, lines.size(), what + " prints one line, not:\n" + err);
        assertTrue(lines.getFirst().startsWith("lmcache4j "), what + ": " + lines.getFirst());
        assertTrue(!err.contains("\tat ") && !err.contains("Exception in thread"), what + ": " + err);
        assertTrue(lines.getFirst().length() < 1_000, what + " is a readable line: " + lines.getFirst().length() + " characters");
        assertTrue(lines.getFirst().chars().noneMatch(c -> c < 0x20 || (c >= 0x7f && c < 0xa0)), what + ": " + lines.getFirst());
    }
}
