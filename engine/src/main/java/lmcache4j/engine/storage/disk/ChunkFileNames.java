package lmcache4j.engine.storage.disk;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Key string → file name. Like LMCache, {@code '/'} becomes {@code '-'}; unlike LMCache the
 * mapping is injective: every byte outside {@code [A-Za-z0-9@._%+=,]} (a literal {@code '-'} and
 * {@code '~'} included) is written as {@code ~XX}, the hex of its UTF-8 byte, and a leading
 * {@code '.'} is escaped so no name is hidden. Names longer than {@value #MAX_STEM} characters keep
 * a prefix and end with {@code ~~} and the SHA-256 of the whole key string; {@code "~~"} never
 * occurs in an untruncated name, so the two kinds cannot collide. The file name is never parsed
 * back: the key string is in the header.
 */
final class ChunkFileNames {
    /** Suffix of a complete chunk file. */
    static final String SUFFIX = ".lmc";
    /** What follows the final name in a temp file's name: {@code <name>.lmc.tmp-<unique>}. */
    static final String TEMP_MARKER = SUFFIX + ".tmp-";
    /** Longest encoded stem, leaving room for the suffixes within the usual 255-byte limit. */
    static final int MAX_STEM = 200;

    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private ChunkFileNames() {
    }

    /** The file name (with {@link #SUFFIX}) of the chunk whose key string is {@code keyString}. */
    static String fileName(String keyString) {
        StringBuilder sb = new StringBuilder(keyString.length() + 16);
        for (int i = 0; i < keyString.length(); i++) {
            char c = keyString.charAt(i);
            if (c == '/') {
                sb.append('-');
            } else if (isSafe(c) && !(i == 0 && c == '.')) {
                sb.append(c);
            } else {
                int cp = keyString.codePointAt(i);
                if (Character.charCount(cp) == 2) {
                    i++;
                }
                for (byte b : new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8)) {
                    sb.append('~').append(HEX[(b >> 4) & 0xF]).append(HEX[b & 0xF]);
                }
            }
        }
        if (sb.length() > MAX_STEM) {
            String digest = sha256Hex(keyString);
            sb.setLength(MAX_STEM - 2 - digest.length());
            sb.append("~~").append(digest);
        }
        return sb.append(SUFFIX).toString();
    }

    /**
     * Whether {@code name} has the form of a temp file of a write (or an O_DIRECT probe):
     * {@code <name>.lmc.tmp-<pid>-<n>}. The name alone does not make a file the cache's: its content
     * must too (see {@link ChunkFileOwnership}).
     */
    static boolean isTemp(String name) {
        int at = name.lastIndexOf(TEMP_MARKER);
        if (at <= 0) {
            return false;
        }
        String unique = name.substring(at + TEMP_MARKER.length());
        int dash = unique.indexOf('-');
        return dash > 0 && allDigits(unique, 0, dash) && allDigits(unique, dash + 1, unique.length());
    }

    private static boolean allDigits(String s, int from, int to) {
        if (from >= to) {
            return false;
        }
        for (int i = from; i < to; i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }

    private static boolean isSafe(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || c == '@' || c == '.' || c == '_' || c == '%' || c == '+' || c == '=' || c == ',';
    }

    private static String sha256Hex(String s) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
            StringBuilder sb = new StringBuilder(d.length * 2);
            for (byte b : d) {
                sb.append(HEX[(b >> 4) & 0xF]).append(HEX[b & 0xF]);
            }
            return sb.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }
}
