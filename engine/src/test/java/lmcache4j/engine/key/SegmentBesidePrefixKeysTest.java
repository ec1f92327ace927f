package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import lmcache4j.allocator.DType;

/**
 * Segment keys beside prefix keys in one engine: LMCache's integer-form segment key of a text is
 * the key of a prefix whose first chunk is that text (the hazard, shown), so an engine keying both
 * uses {@link SegmentTokenDatabase#besidePrefixes}, whose keys no prefix chunk can have, in either
 * key form, while a segment still has one key wherever it appears.
 */
class SegmentBesidePrefixKeysTest {
    private static final ChunkHasher HASHER = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");
    private static final KeyFactory KEYS = new KeyFactory("m", 1, 0, DType.FLOAT32);
    private static final int[] SEP = {35, 671, 35};
    private static final int CHUNK = 16;

    private static int[] join(int[]... parts) {
        return java.util.Arrays.stream(parts).flatMapToInt(java.util.Arrays::stream).toArray();
    }

    @ParameterizedTest
    @EnumSource(StorageKeys.class)
    void noSegmentKeyEqualsAPrefixChunkKeyOfTheSameTokens(StorageKeys form) {
        int[] text = new Random(1).ints(CHUNK, 0, 30_000).toArray();
        // A prompt that is exactly the text: its first (only) prefix chunk and its only segment.
        ChunkedTokenDatabase prefixes = new ChunkedTokenDatabase(CHUNK, true, HASHER, KEYS, form);
        SegmentTokenDatabase apart = SegmentTokenDatabase.besidePrefixes(SEP, HASHER, KEYS, form);
        CacheEngineKey prefixKey = prefixes.processTokens(text).getFirst().key();
        assertNotEquals(prefixKey, apart.processTokens(text).getFirst().key(), "segment and prefix chunk share a key");
        if (form == StorageKeys.LMCACHE) {
            assertEquals(prefixKey, new SegmentTokenDatabase(SEP, HASHER, KEYS, form).processTokens(text).getFirst().key(),
                    "LMCache's own segment key is the first prefix chunk's: why the shared engine sets them apart");
        }
    }

    @ParameterizedTest
    @EnumSource(StorageKeys.class)
    void aSegmentBesidePrefixesStillHasOneKeyAnywhereAndNoneOfAPromptsPrefixKeys(StorageKeys form) {
        Random random = new Random(2);
        int[] doc = random.ints(40, 0, 30_000).toArray();
        int[] before = random.ints(CHUNK, 0, 30_000).toArray();
        SegmentTokenDatabase apart = SegmentTokenDatabase.besidePrefixes(SEP, HASHER, KEYS, form);
        List<ChunkRange> first = apart.processTokens(join(doc, SEP, before));
        List<ChunkRange> later = apart.processTokens(join(before, SEP, doc));
        assertEquals(first.getFirst().key(), later.getLast().key(), "the same document, another position");
        assertEquals(2, first.size());

        ChunkedTokenDatabase prefixes = new ChunkedTokenDatabase(CHUNK, true, HASHER, KEYS, form);
        Set<CacheEngineKey> prefixKeys = new HashSet<>();
        for (int[] prompt : List.of(doc, before, join(doc, SEP, before), join(before, SEP, doc))) {
            prefixes.processTokens(prompt).forEach(r -> prefixKeys.add(r.key()));
        }
        for (ChunkRange r : first) {
            assertTrue(!prefixKeys.contains(r.key()), "segment " + r + " has a prefix chunk's key");
        }
    }
}
