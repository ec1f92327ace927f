package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.List;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/** The prefix chain's defining properties: determinism, and that a change reaches forward only. */
class ChunkHasherProperties {
    private static final ChunkHasher HASHER = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");

    @Provide
    Arbitrary<int[]> tokens() {
        return Arbitraries.integers().between(0, 200_000).array(int[].class).ofMinSize(1).ofMaxSize(300);
    }

    @Property
    void sameTokensGiveSameHashes(@ForAll("tokens") int[] tokens, @ForAll @IntRange(min = 1, max = 64) int chunkSize) {
        assertEquals(HASHER.chain(tokens, chunkSize, true), HASHER.chain(tokens.clone(), chunkSize, true));
        assertEquals(HASHER.chain(tokens, chunkSize, true),
                ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0").chain(tokens, chunkSize, true), "a new hasher, the same seed");
    }

    @Property
    void changingOneTokenChangesItsChunkAndAllLaterOnesButNoEarlierOne(@ForAll("tokens") int[] tokens,
            @ForAll @IntRange(min = 1, max = 64) int chunkSize, @ForAll @IntRange(min = 0, max = 299) int where,
            @ForAll @IntRange(min = 1, max = 1000) int delta) {
        int at = where % tokens.length;
        int[] changed = tokens.clone();
        changed[at] += delta;
        List<ChunkHash> before = HASHER.chain(tokens, chunkSize, true);
        List<ChunkHash> after = HASHER.chain(changed, chunkSize, true);
        assertEquals(before.size(), after.size());
        int changedChunk = at / chunkSize;
        for (int i = 0; i < before.size(); i++) {
            if (i < changedChunk) {
                assertEquals(before.get(i), after.get(i), "chunk " + i + " precedes the change");
            } else {
                assertNotEquals(before.get(i), after.get(i), "chunk " + i + " is at or after the change in chunk " + changedChunk);
            }
        }
    }

    @Property
    void aDifferentSeedChangesEveryHash(@ForAll("tokens") int[] tokens, @ForAll @IntRange(min = 1, max = 64) int chunkSize) {
        List<ChunkHash> a = HASHER.chain(tokens, chunkSize, true);
        List<ChunkHash> b = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "1").chain(tokens, chunkSize, true);
        for (int i = 0; i < a.size(); i++) {
            assertNotEquals(a.get(i), b.get(i));
        }
    }

    @Provide
    Arbitrary<int[]> longTokens() {
        // Every CBOR integer size, negatives included, in prompts long enough for the two-thread chain.
        Arbitrary<Integer> token = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(6, Arbitraries.integers().between(0, 200_000)),
                net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0, 300)),
                net.jqwik.api.Tuple.of(1, Arbitraries.integers()));
        return token.array(int[].class).ofMinSize(0).ofMaxSize(6_000);
    }

    @Property // tries: jqwik.tries.default, from -Dlmcache4j.fuzz.tries (60 in CI)
    void theTwoThreadChainEqualsTheChunkByChunkChain(@ForAll("longTokens") int[] tokens,
            @ForAll @IntRange(min = 1, max = 300) int chunkSize, @ForAll boolean includePartial) {
        List<ChunkHash> chain = HASHER.chain(tokens, chunkSize, includePartial);
        int end = includePartial ? tokens.length : tokens.length - tokens.length % chunkSize;
        ChunkHash parent = HASHER.noneHash();
        java.util.ArrayList<ChunkHash> expected = new java.util.ArrayList<>();
        for (int start = 0; start < end; start += chunkSize) {
            parent = HASHER.next(parent, tokens, start, Math.min(start + chunkSize, end));
            expected.add(parent);
        }
        assertEquals(expected, chain);
    }

    @Property
    void theChainIsPrefixStable(@ForAll("tokens") int[] tokens, @ForAll @IntRange(min = 1, max = 64) int chunkSize,
            @ForAll @IntRange(min = 0, max = 300) int cut) {
        // A request that extends another shares the hashes of all its full leading chunks.
        int[] prefix = java.util.Arrays.copyOf(tokens, Math.min(cut, tokens.length));
        List<ChunkHash> whole = HASHER.chain(tokens, chunkSize, false);
        List<ChunkHash> part = HASHER.chain(prefix, chunkSize, false);
        assertEquals(whole.subList(0, part.size()), part);
    }
}
