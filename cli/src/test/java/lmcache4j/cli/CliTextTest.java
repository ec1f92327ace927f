package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;

import org.junit.jupiter.api.Test;

class CliTextTest {
    @Test
    void controlCharactersAreEscapedAndPrintableTextIsKept() {
        assertEquals("plain text, ümlaut & 漢字", CliText.escape("plain text, ümlaut & 漢字"));
        assertEquals("a\\x1b[2Jb\\nc\\td\\x00\\x7f", CliText.escape("a\u001b[2Jb\nc\td\u0000\u007f"));
        assertEquals("\\u009b31m \\u202eevil \\u2028", CliText.escape("\u009b31m \u202eevil \u2028"));
    }

    @Test
    void longInputIsCutAndCounted() {
        String echoed = CliText.echo("x".repeat(10_000));
        assertTrue(echoed.startsWith("x".repeat(CliText.MAX_ECHO_CHARS) + "... (10000 characters)"), echoed);
        assertEquals("short", CliText.echo("short"));
    }

    @Test
    void aFailureIsOneLineWithTheCausesThatAddSomething() {
        IOException io = new IOException("Permission denied\nsecond line");
        assertEquals("cannot open x: Permission denied\\nsecond line",
                CliText.oneLine(new UncheckedIOException("cannot open x: Permission denied\nsecond line", io)));
        assertEquals("outer: inner", CliText.oneLine(new RuntimeException("outer", new IllegalStateException("inner"))));
        assertEquals("StackOverflowError", CliText.oneLine(new StackOverflowError()));
    }

    /** A wrapper that named the file and said why is not followed by the cause repeating the file. */
    @Test
    void aFileNamedByItsWrapperIsNotRepeatedByTheCause() {
        assertEquals("cannot create the chunk directory /x/y: permission denied", CliText.oneLine(new UncheckedIOException(
                "cannot create the chunk directory /x/y: permission denied", new java.nio.file.AccessDeniedException("/x/y"))));
        assertEquals("cannot open the tier: no such file: /x/y", CliText.oneLine(new UncheckedIOException(
                "cannot open the tier", new java.nio.file.NoSuchFileException("/x/y"))), "a cause naming a new file stays");
    }
}
