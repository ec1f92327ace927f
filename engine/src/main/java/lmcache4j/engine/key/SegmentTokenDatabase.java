package lmcache4j.engine.key;

import java.util.ArrayList;
import java.util.List;

/**
 * LMCache's {@code SegmentTokenDatabase} for blending (CacheBlend, spec §5.2): tokens split at
 * every occurrence of a separator sequence, each segment keyed by a hash of its own tokens alone,
 * so the same document yields the same key wherever it appears in a prompt.
 *
 * <p>As in LMCache, a segment is hashed without a parent ({@link ChunkHasher#segment}: LMCache's
 * current form puts {@code NONE_HASH} there, the older digest form CBOR null), its range is its true position in the input (after
 * the separator that precedes it), and with a mask, segments that start inside the {@code False}
 * prefix are left out. There is no chunk size, so the prefix need not be a multiple of anything.
 *
 * <p>Where LMCache's behaviour is an accident rather than a rule, lmcache4j decides:
 * <ul>
 *   <li>An empty separator, or one longer than the input: LMCache yields the whole input and then
 *       goes on splitting (an over-long separator then fails in {@code torch.unfold}; an empty one
 *       matches at every position and yields one-token segments with shifted ranges). Here the
 *       whole input is one segment and that is all.</li>
 *   <li>Empty segments (a separator at the start or end, or two in a row): LMCache yields
 *       zero-token ranges keyed by the hash of an empty tuple, which carry no KV. Here they are
 *       left out; the other segments' ranges are unchanged.</li>
 *   <li>Overlapping occurrences (a separator like {@code [7, 7]} in {@code 7 7 7}): LMCache splits
 *       at each and produces ranges past the input's end. Here occurrences are found left to
 *       right without overlap, as {@code String.split} does.</li>
 *   <li>LMCache asserts that fewer than all tokens are masked; here an all-{@code False} mask
 *       simply yields nothing.</li>
 * </ul>
 */
public final class SegmentTokenDatabase extends TokenDatabase {
    private final int[] separator;
    private final boolean apartFromPrefixes;

    /**
     * A database whose keys carry LMCache's current integer hashes ({@link StorageKeys#LMCACHE}).
     *
     * @param separator the separator's token ids (LMCache: the tokenizer's encoding of
     *                  {@code blend_special_str}, default {@code " # # "}, without the leading BOS)
     * @param hasher    the hash function and seed (the digest form does not use the seed)
     * @param keys      the engine identity the keys carry
     */
    public SegmentTokenDatabase(int[] separator, ChunkHasher hasher, KeyFactory keys) {
        this(separator, hasher, keys, StorageKeys.defaultForm());
    }

    /** As above, with the keys' hash form: {@code storage_chunk_keys}. */
    public SegmentTokenDatabase(int[] separator, ChunkHasher hasher, KeyFactory keys, StorageKeys form) {
        this(separator, hasher, keys, form, false);
    }

    private SegmentTokenDatabase(int[] separator, ChunkHasher hasher, KeyFactory keys, StorageKeys form,
                                 boolean apartFromPrefixes) {
        super(hasher, keys, form);
        this.separator = separator.clone();
        this.apartFromPrefixes = apartFromPrefixes;
    }

    /**
     * A database for an engine that keys prefix requests too (a {@link ChunkedTokenDatabase} with
     * the same hasher and key fields): its keys can never equal a prefix chunk's. LMCache's own
     * integer-form segment key of text {@code T} is the key of a prefix whose first chunk is
     * {@code T}, but the two hold different KV (a segment's is computed after other text and its
     * keys are moved to positions {@code 0…}), so a shared engine must not let one serve the other.
     * Here a segment's hash carries an extra key no prefix chunk has; the keys are lmcache4j's own
     * and match no LMCache segment key.
     */
    public static SegmentTokenDatabase besidePrefixes(int[] separator, ChunkHasher hasher, KeyFactory keys,
                                                      StorageKeys form) {
        return new SegmentTokenDatabase(separator, hasher, keys, form, true);
    }

    /** A copy of the separator's token ids. */
    public int[] separator() {
        return separator.clone();
    }

    /** Segments have no size, so any prefix can be left out. */
    @Override
    void checkSkip(int skipBefore) {
    }

    @Override
    List<HashRange> hashRanges(int[] tokens, int skipBefore) {
        List<HashRange> ranges = new ArrayList<>();
        int sep = separator.length;
        int segmentStart = 0;
        if (sep > 0) {
            int i = 0;
            while (i <= tokens.length - sep) {
                if (separatorAt(tokens, i)) {
                    add(ranges, tokens, segmentStart, i, skipBefore);
                    i += sep;
                    segmentStart = i;
                } else {
                    i++;
                }
            }
        }
        add(ranges, tokens, segmentStart, tokens.length, skipBefore);
        return ranges;
    }

    private boolean separatorAt(int[] tokens, int at) {
        for (int k = 0; k < separator.length; k++) {
            if (tokens[at + k] != separator[k]) {
                return false;
            }
        }
        return true;
    }

    private void add(List<HashRange> ranges, int[] tokens, int from, int to, int skipBefore) {
        if (to > from && from >= skipBefore) {
            ranges.add(new HashRange(from, to, apartFromPrefixes ? hasher().segmentApart(tokens, from, to, storageKeys())
                    : hasher().segment(tokens, from, to, storageKeys())));
        }
    }

    @Override
    public String toString() {
        return "SegmentTokenDatabase[separator of " + separator.length + " tokens, " + hasher().algorithm().lmcacheName()
                + (apartFromPrefixes ? ", keys apart from prefix keys" : "") + "]";
    }
}
