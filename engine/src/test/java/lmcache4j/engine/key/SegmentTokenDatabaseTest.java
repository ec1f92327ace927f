package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import lmcache4j.allocator.DType;
import org.junit.jupiter.api.Test;

class SegmentTokenDatabaseTest {
    private static final ChunkHasher HASHER = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");
    private static final KeyFactory KEYS = new KeyFactory("m", 1, 0, DType.FLOAT16);
    private static final int[] SEP = {35, 671, 35};

    private static SegmentTokenDatabase db(int... separator) {
        return new SegmentTokenDatabase(separator, HASHER, KEYS);
    }

    private static List<String> spans(List<HashRange> ranges) {
        return ranges.stream().map(r -> r.start() + "-" + r.end()).toList();
    }

    private static int[] join(int[]... parts) {
        return java.util.Arrays.stream(parts).flatMapToInt(java.util.Arrays::stream).toArray();
    }

    private static boolean[] mask(int falses, int length) {
        boolean[] m = new boolean[length];
        java.util.Arrays.fill(m, falses, length, true);
        return m;
    }

    @Test
    void segmentsAreSplitAtEachSeparatorAndRangesSkipTheSeparators() {
        int[] tokens = join(new int[] {1, 2, 3}, SEP, new int[] {4, 5}, SEP, new int[] {6});
        List<HashRange> ranges = db(SEP).hashTokens(tokens);
        assertEquals(List.of("0-3", "6-8", "11-12"), spans(ranges));
        assertEquals(HASHER.segment(tokens, 6, 8, StorageKeys.LMCACHE), ranges.get(1).hash());
    }

    @Test
    void aSegmentHashesTheSameWhereverItIs() {
        int[] doc = {7, 8, 9, 10};
        int[] first = join(doc, SEP, new int[] {1});
        int[] later = join(new int[] {5, 5, 5, 5, 5}, SEP, doc);
        ChunkHash a = db(SEP).hashTokens(first).get(0).hash();
        ChunkHash b = db(SEP).hashTokens(later).get(1).hash();
        assertEquals(a, b);
        assertEquals(ChunkHash.ofLong(HASHER.nextIntKey(HASHER.noneIntKey(), doc, 0, doc.length)), a,
                "no parent: NONE_HASH in its place, as LMCache's current _hash_tokens(segment)");
        // The older digest form: CBOR null in the parent's place, so the seed does not enter it.
        ChunkHash digest = new SegmentTokenDatabase(SEP, HASHER, KEYS, StorageKeys.DIGEST).hashTokens(first).get(0).hash();
        assertEquals(HASHER.unchained(doc, 0, doc.length), digest, "no parent: CBOR null, as LMCache's _hash_tokens(segment) before PR #2999");
        assertEquals(digest, new SegmentTokenDatabase(SEP, ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "other"), KEYS,
                StorageKeys.DIGEST).hashTokens(first).get(0).hash(), "the seed does not enter a digest-form segment's hash");
    }

    @Test
    void separatorsAtTheStartTheEndOrInARowLeaveNoEmptySegments() {
        assertEquals(List.of("3-5"), spans(db(SEP).hashTokens(join(SEP, new int[] {1, 2}))));
        assertEquals(List.of("0-2"), spans(db(SEP).hashTokens(join(new int[] {1, 2}, SEP))));
        assertEquals(List.of("0-1", "7-8"), spans(db(SEP).hashTokens(join(new int[] {1}, SEP, SEP, new int[] {2}))));
        assertEquals(List.of(), spans(db(SEP).hashTokens(SEP)));
        assertEquals(List.of(), spans(db(SEP).hashTokens(new int[0])));
    }

    @Test
    void aPartialSeparatorDoesNotSplit() {
        int[] tokens = {1, 35, 671, 2, 35, 671};
        assertEquals(List.of("0-6"), spans(db(SEP).hashTokens(tokens)));
    }

    @Test
    void occurrencesAreFoundLeftToRightWithoutOverlap() {
        // [7 7] in 1 7 7 7 2: one split at 1, the third 7 starts the next segment.
        assertEquals(List.of("0-1", "3-5"), spans(db(7, 7).hashTokens(new int[] {1, 7, 7, 7, 2})));
    }

    @Test
    void anEmptyOrOverLongSeparatorYieldsTheWholeInputOnce() {
        int[] tokens = {1, 2, 3};
        assertEquals(List.of("0-3"), spans(db().hashTokens(tokens)));
        assertEquals(List.of("0-3"), spans(db(1, 2, 3, 4).hashTokens(tokens)));
        assertEquals(HASHER.segment(tokens, 0, 3, StorageKeys.LMCACHE), db().hashTokens(tokens).get(0).hash());
    }

    @Test
    void segmentsStartingInTheMaskedPrefixAreSkipped() {
        int[] tokens = join(new int[] {1, 2, 3}, SEP, new int[] {4, 5}, SEP, new int[] {6});
        assertEquals(List.of("6-8", "11-12"), spans(db(SEP).hashTokens(tokens, mask(3, 12))));
        assertEquals(List.of("6-8", "11-12"), spans(db(SEP).hashTokens(tokens, mask(6, 12))), "no multiple-of rule");
        assertEquals(List.of("11-12"), spans(db(SEP).hashTokens(tokens, mask(7, 12))), "a straddling segment is skipped");
        assertEquals(List.of(), spans(db(SEP).hashTokens(tokens, mask(12, 12))));
        assertThrows(IllegalArgumentException.class, () -> db(SEP).hashTokens(tokens, mask(0, 11)));
    }

    @Test
    void keysAndTheSeparatorCopy() {
        int[] sep = {9};
        SegmentTokenDatabase db = db(sep);
        sep[0] = 8;
        assertEquals(9, db.separator()[0], "the separator was copied");
        List<ChunkRange> keyed = db.processTokens(new int[] {1, 9, 2});
        assertEquals(2, keyed.size());
        assertEquals(new CacheEngineKey("m", 1, 0, HASHER.segment(new int[] {2}, 0, 1, StorageKeys.LMCACHE), DType.FLOAT16), keyed.get(1).key());
        assertTrue(db.toString().contains("separator of 1 tokens"));
    }
}
