package lmcache4j.cli;

import java.nio.file.FileSystemException;
import java.util.Locale;

/**
 * Text a command prints that did not come from the command itself: user input echoed in an error
 * and the messages of exceptions. Control characters are escaped (an ESC sequence from stdin must
 * not reach the terminal) and long input is cut, so that every error stays one readable line.
 */
final class CliText {
    /** The most characters of one piece of user input an error message repeats. */
    static final int MAX_ECHO_CHARS = 120;

    private CliText() {
    }

    /**
     * {@code input} as an error message may quote it: control characters escaped, at most
     * {@link #MAX_ECHO_CHARS} characters of it kept and the rest counted.
     */
    static String echo(String input) {
        if (input == null) {
            return "null";
        }
        if (input.length() <= MAX_ECHO_CHARS) {
            return escape(input);
        }
        return escape(input.substring(0, MAX_ECHO_CHARS)) + "... (" + input.length() + " characters)";
    }

    /**
     * {@code text} with every control character written as an escape ({@code \n}, {@code \t},
     * {@code \x1b}, {@code \u2028}, ...), so it prints as one line and moves no cursor.
     */
    static String escape(String text) {
        StringBuilder sb = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            String escaped = escaped(c);
            if (escaped == null) {
                if (sb != null) {
                    sb.append(c);
                }
                continue;
            }
            if (sb == null) {
                sb = new StringBuilder(text.length() + 16).append(text, 0, i);
            }
            sb.append(escaped);
        }
        return sb == null ? text : sb.toString();
    }

    private static String escaped(char c) {
        return switch (c) {
            case '\n' -> "\\n";
            case '\r' -> "\\r";
            case '\t' -> "\\t";
            default -> {
                if (c < 0x20 || c == 0x7f) {
                    yield String.format("\\x%02x", (int) c);
                }
                // C1 controls (a terminal may read 0x9b as CSI), bidi overrides and line separators.
                if ((c >= 0x80 && c < 0xa0) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)
                        || c == 0x2028 || c == 0x2029) {
                    yield String.format("\\u%04x", (int) c);
                }
                yield null;
            }
        };
    }

    /**
     * A failure as one line: its message (its class name when it has none), followed by the
     * messages of its causes that add something, escaped and joined with ": ".
     */
    static String oneLine(Throwable failure) {
        StringBuilder sb = new StringBuilder();
        int depth = 0;
        for (Throwable t = failure; t != null && depth < 8; t = t.getCause(), depth++) {
            String message = message(t);
            if (sb.indexOf(message) >= 0 || namedAlready(t, sb)) {
                continue; // a wrapper repeating its cause
            }
            if (!sb.isEmpty()) {
                sb.append(": ");
            }
            sb.append(message);
        }
        return escape(sb.toString());
    }

    /** A file system error about a file a wrapper named already, with its own reason (it said what happened). */
    private static boolean namedAlready(Throwable t, StringBuilder line) {
        return t instanceof FileSystemException fs && fs.getReason() == null && fs.getFile() != null
                && line.indexOf(fs.getFile()) >= 0 && line.indexOf(fs.getFile() + ": ") >= 0;
    }

    /** A file system error names what happened, not only the file ({@code no such file: /x}, not {@code /x}). */
    private static String message(Throwable t) {
        if (t instanceof FileSystemException fs && fs.getReason() == null && fs.getFile() != null) {
            return words(t) + ": " + fs.getFile() + (fs.getOtherFile() == null ? "" : " -> " + fs.getOtherFile());
        }
        return t.getMessage() == null || t.getMessage().isBlank() ? t.getClass().getSimpleName() : t.getMessage().strip();
    }

    /** {@code NoSuchFileException} as {@code no such file}. */
    private static String words(Throwable t) {
        String name = t.getClass().getSimpleName().replaceFirst("(Exception|Error)$", "");
        return name.replaceAll("([a-z])([A-Z])", "$1 $2").toLowerCase(Locale.ROOT);
    }
}
