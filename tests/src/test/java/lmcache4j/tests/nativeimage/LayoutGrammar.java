package lmcache4j.tests.nativeimage;

import java.lang.foreign.Linker;
import java.util.Set;

/**
 * Checks a layout string of GraalVM's reachability metadata: GraalVM's configuration parser
 * reads type names as plain strings, and only the image builder resolves them, so a misspelt
 * name would pass it. Accepted: a name of {@link Linker#canonicalLayouts()} on this platform, or
 * {@code struct(L, ...)}, {@code union(L, ...)}, {@code sequence(N, L)}, {@code align(N, L)} and
 * {@code padding(N)} built from them.
 */
final class LayoutGrammar {
    private final String text;
    private final Set<String> canonical = Linker.nativeLinker().canonicalLayouts().keySet();
    private int at;

    private LayoutGrammar(String text) {
        this.text = text;
    }

    static boolean isValid(String layout) {
        LayoutGrammar grammar = new LayoutGrammar(layout);
        return grammar.layout() && grammar.at == layout.length();
    }

    private boolean layout() {
        skipSpaces();
        String word = word();
        return switch (word) {
            case "struct", "union" -> list();
            case "sequence", "align" -> expect('(') && number() && expect(',') && layout() && expect(')');
            case "padding" -> expect('(') && number() && expect(')');
            default -> canonical.contains(word);
        };
    }

    private boolean list() {
        if (!expect('(')) {
            return false;
        }
        skipSpaces();
        if (peek() == ')') {
            at++;
            return true;
        }
        do {
            if (!layout()) {
                return false;
            }
            skipSpaces();
        } while (peek() == ',' && at++ >= 0);
        return expect(')');
    }

    /** Lower-case letters, '_', '*' and single inner spaces ("long long", "void*"). */
    private String word() {
        int start = at;
        while (at < text.length() && (Character.isLowerCase(text.charAt(at)) || text.charAt(at) == '_'
                || text.charAt(at) == '*' || (text.charAt(at) == ' ' && at + 1 < text.length()
                && Character.isLowerCase(text.charAt(at + 1)) && at > start))) {
            at++;
        }
        return text.substring(start, at);
    }

    private boolean number() {
        skipSpaces();
        int start = at;
        while (at < text.length() && Character.isDigit(text.charAt(at))) {
            at++;
        }
        return at > start && Long.parseLong(text, start, at, 10) > 0;
    }

    private boolean expect(char c) {
        skipSpaces();
        if (peek() != c) {
            return false;
        }
        at++;
        return true;
    }

    private char peek() {
        return at < text.length() ? text.charAt(at) : '\0';
    }

    private void skipSpaces() {
        while (peek() == ' ') {
            at++;
        }
    }
}
