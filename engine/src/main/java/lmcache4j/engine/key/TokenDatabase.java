package lmcache4j.engine.key;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Turns a request's tokens into {@code (start, end, key)} ranges: LMCache's {@code TokenDatabase}
 * and its {@code process_tokens} (spec §5). Two kinds exist: {@link ChunkedTokenDatabase}
 * (fixed-size chunks, prefix hash chain) and {@link SegmentTokenDatabase} (separator-delimited
 * segments, each hashed on its own, for blending).
 *
 * <p>A mask, where given, has one entry per token and the form {@code F...FT...T}; ranges that
 * start inside the {@code False} prefix are left out (the caller already has those tokens).
 * Request configs named {@code lmcache.tag.*} become the keys' tags. Thread-safe.
 */
public abstract sealed class TokenDatabase permits ChunkedTokenDatabase, SegmentTokenDatabase {
    private final ChunkHasher hasher;
    private final KeyFactory keys;
    private final StorageKeys form;

    TokenDatabase(ChunkHasher hasher, KeyFactory keys, StorageKeys form) {
        this.hasher = Objects.requireNonNull(hasher, "hasher");
        this.keys = Objects.requireNonNull(keys, "keys");
        this.form = Objects.requireNonNull(form, "form");
    }

    /** Which hash the keys carry ({@code storage_chunk_keys}). */
    public final StorageKeys storageKeys() {
        return form;
    }

    /** The hash function and seed. */
    public final ChunkHasher hasher() {
        return hasher;
    }

    /** The engine identity the keys carry. */
    public final KeyFactory keyFactory() {
        return keys;
    }

    /** The keyed ranges of all of {@code tokens}, without tags. */
    public final List<ChunkRange> processTokens(int[] tokens) {
        return keyed(hashTokens(tokens), Map.of());
    }

    /** The keyed ranges of all of {@code tokens}, tagged from {@code requestConfigs}. */
    public final List<ChunkRange> processTokens(int[] tokens, Map<String, String> requestConfigs) {
        return keyed(hashTokens(tokens), requestConfigs);
    }

    /** The keyed ranges of {@code tokens} that start at or after the mask's {@code False} prefix, without tags. */
    public final List<ChunkRange> processTokens(int[] tokens, boolean[] mask) {
        return processTokens(tokens, mask, Map.of());
    }

    /**
     * The keyed ranges of {@code tokens} that start at or after the mask's {@code False} prefix.
     *
     * @param requestConfigs the request's configs; those named {@code lmcache.tag.<name>} become tags
     * @throws IllegalArgumentException for a mask of the wrong length or form (see the subclass for its own rules)
     */
    public final List<ChunkRange> processTokens(int[] tokens, boolean[] mask, Map<String, String> requestConfigs) {
        return keyed(hashTokens(tokens, mask), requestConfigs);
    }

    /** Like {@link #processTokens(int[])} but with raw hashes (LMCache's {@code make_key=False}). */
    public final List<HashRange> hashTokens(int[] tokens) {
        Objects.requireNonNull(tokens, "tokens");
        return hashRanges(tokens, 0);
    }

    /** Like {@link #processTokens(int[], boolean[])} but with raw hashes (LMCache's {@code make_key=False}). */
    public final List<HashRange> hashTokens(int[] tokens, boolean[] mask) {
        Objects.requireNonNull(tokens, "tokens");
        Objects.requireNonNull(mask, "mask");
        return hashRanges(tokens, TokenMask.leadingFalse(mask, tokens.length));
    }

    /**
     * How many leading tokens {@code mask} leaves out: its {@code False} prefix, after the same
     * checks a masked {@link #processTokens(int[], boolean[], Map)} makes. The ranges that call
     * returns are exactly those of the unmasked call that start at or after this many tokens, so a
     * caller holding the unmasked ranges need not hash again.
     *
     * @throws IllegalArgumentException for a mask of the wrong length or form
     */
    public final int maskedPrefix(boolean[] mask, int tokenCount) {
        Objects.requireNonNull(mask, "mask");
        int skip = TokenMask.leadingFalse(mask, tokenCount);
        checkSkip(skip);
        return skip;
    }

    /** {@link #processHashes(List, int[], Map)} without tags. */
    public final List<ChunkRange> processHashes(List<ChunkHash> hashes, int[] lengths) {
        return processHashes(hashes, lengths, Map.of());
    }

    /**
     * Keys for hashes computed elsewhere (by vLLM's scheduler, for example): consecutive ranges of
     * the given lengths from token 0, each with its hash; nothing is re-hashed and there is no
     * mask. LMCache zips the two lists and silently drops the longer one's tail; here their sizes
     * must match.
     *
     * @param lengths the token count of each range, each at least 0
     * @throws IllegalArgumentException when the sizes differ, a length is negative or the total overflows an int
     */
    public final List<ChunkRange> processHashes(List<ChunkHash> hashes, int[] lengths, Map<String, String> requestConfigs) {
        if (hashes.size() != lengths.length) {
            throw new IllegalArgumentException("got " + hashes.size() + " hashes but " + lengths.length
                    + " lengths; each hash needs the token count of its range");
        }
        Map<String, String> tags = CacheEngineKey.tagsOf(requestConfigs);
        List<ChunkRange> keyed = new ArrayList<>(lengths.length);
        int start = 0;
        for (int i = 0; i < lengths.length; i++) {
            if (lengths[i] < 0) {
                throw new IllegalArgumentException("length " + i + " is " + lengths[i] + "; a range has at least 0 tokens");
            }
            int end;
            try {
                end = Math.addExact(start, lengths[i]);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("the lengths add up to more than " + Integer.MAX_VALUE + " tokens", e);
            }
            keyed.add(new ChunkRange(start, end, keys.key(hashes.get(i), tags)));
            start = end;
        }
        return keyed;
    }

    /** The hashed ranges of {@code tokens}, leaving out those that start before {@code skipBefore}. */
    abstract List<HashRange> hashRanges(int[] tokens, int skipBefore);

    /** Throws when this database cannot leave out the first {@code skipBefore} tokens (a mask's False prefix). */
    abstract void checkSkip(int skipBefore);

    private List<ChunkRange> keyed(List<HashRange> hashed, Map<String, String> requestConfigs) {
        Map<String, String> tags = CacheEngineKey.tagsOf(requestConfigs);
        List<ChunkRange> keyed = new ArrayList<>(hashed.size());
        for (HashRange r : hashed) {
            keyed.add(new ChunkRange(r.start(), r.end(), keys.key(r.hash(), tags)));
        }
        return keyed;
    }
}
