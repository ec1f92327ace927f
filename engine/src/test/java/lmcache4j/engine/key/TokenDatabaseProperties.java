package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import lmcache4j.allocator.DType;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/** Range invariants of both token databases over arbitrary inputs. */
class TokenDatabaseProperties {
    private static final ChunkHasher HASHER = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");
    private static final KeyFactory KEYS = new KeyFactory("m", 1, 0, DType.BFLOAT16);

    @Provide
    Arbitrary<int[]> tokens() {
        // A small alphabet so that separators occur often.
        return Arbitraries.integers().between(0, 4).array(int[].class).ofMaxSize(200);
    }

    @Property
    void chunksTileTheTokensAndAMaskOnlyDropsLeadingChunks(@ForAll("tokens") int[] tokens,
            @ForAll @IntRange(min = 1, max = 32) int chunkSize, @ForAll boolean saveUnfull,
            @ForAll @IntRange(min = 0, max = 10) int maskedChunks) {
        ChunkedTokenDatabase db = new ChunkedTokenDatabase(chunkSize, saveUnfull, HASHER, KEYS);
        List<HashRange> all = db.hashTokens(tokens);
        int expectedEnd = saveUnfull ? tokens.length : tokens.length - tokens.length % chunkSize;
        int at = 0;
        for (HashRange r : all) {
            assertEquals(at, r.start());
            assertTrue(r.length() == chunkSize || saveUnfull && r.end() == tokens.length && r.length() < chunkSize);
            at = r.end();
        }
        assertEquals(expectedEnd, at);

        int falses = Math.min(maskedChunks * chunkSize, tokens.length - tokens.length % chunkSize);
        boolean[] mask = new boolean[tokens.length];
        java.util.Arrays.fill(mask, falses, tokens.length, true);
        List<HashRange> masked = db.hashTokens(tokens, mask);
        assertEquals(all.stream().filter(r -> r.start() >= falses).toList(), masked);
    }

    @Property
    void segmentsAreTheSeparatorFreePiecesInOrder(@ForAll("tokens") int[] tokens,
            @ForAll("separators") int[] separator) {
        SegmentTokenDatabase db = new SegmentTokenDatabase(separator, HASHER, KEYS);
        List<HashRange> ranges = db.hashTokens(tokens);
        int previousEnd = 0;
        for (HashRange r : ranges) {
            assertTrue(r.start() >= previousEnd && r.end() > r.start() && r.end() <= tokens.length);
            assertEquals(HASHER.segment(tokens, r.start(), r.end(), StorageKeys.LMCACHE), r.hash());
            // Between segments there are only whole separators.
            int gap = r.start() - previousEnd;
            if (separator.length > 0) {
                assertEquals(0, gap % separator.length);
            } else {
                assertEquals(0, gap);
            }
            previousEnd = r.end();
        }
        // What the ranges cover plus the separators between them is the input.
        String joined = ranges.stream().map(r -> join(tokens, r.start(), r.end()))
                .reduce((a, b) -> a + "|" + b).orElse("");
        String sep = join(separator, 0, separator.length);
        String expected = separator.length == 0 ? join(tokens, 0, tokens.length)
                : java.util.Arrays.stream(join(tokens, 0, tokens.length).split("\\Q" + sep + "\\E", -1))
                        .map(s -> s.replaceAll("^,|,$", "")).filter(s -> !s.isEmpty()).reduce((a, b) -> a + "|" + b).orElse("");
        assertEquals(expected, joined, "String.split, leftmost and without overlap, empty pieces dropped");
    }

    @Provide
    Arbitrary<int[]> separators() {
        return Arbitraries.integers().between(0, 4).array(int[].class).ofMaxSize(3);
    }

    private static String join(int[] t, int from, int to) {
        StringBuilder sb = new StringBuilder();
        for (int i = from; i < to; i++) {
            sb.append(sb.isEmpty() ? "" : ",").append(t[i]);
        }
        return sb.toString();
    }
}
