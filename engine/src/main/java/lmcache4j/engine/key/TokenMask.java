package lmcache4j.engine.key;

/** Checks on LMCache's token masks and ranges, shared by the token databases. */
final class TokenMask {
    private TokenMask() {
    }

    /**
     * The number of leading {@code false} entries of a mask, after checking it has one entry per
     * token and the form {@code F...FT...T}: a prefix of tokens the caller already has (not to be
     * processed) followed by the tokens to process.
     *
     * @throws IllegalArgumentException when the lengths differ or a {@code false} follows a {@code true}
     */
    static int leadingFalse(boolean[] mask, int tokenCount) {
        if (mask.length != tokenCount) {
            throw new IllegalArgumentException("the mask has " + mask.length + " entries but there are " + tokenCount
                    + " tokens; it needs one entry per token");
        }
        int falses = 0;
        while (falses < mask.length && !mask[falses]) {
            falses++;
        }
        for (int i = falses; i < mask.length; i++) {
            if (!mask[i]) {
                throw new IllegalArgumentException("the mask must be False...False then True...True (a prefix of "
                        + "tokens to skip, then the tokens to process), but entry " + i + " is False after True at " + falses);
            }
        }
        return falses;
    }

    static void checkRange(int start, int end) {
        if (start < 0 || end < start) {
            throw new IllegalArgumentException("token range [" + start + ", " + end + ") must have 0 <= start <= end");
        }
    }
}
