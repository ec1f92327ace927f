package lmcache4j.bench.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;

import lmcache4j.engine.connector.PagedKvCache;
import org.junit.jupiter.api.Test;

/** The demo's verifier: every damaged byte of the checked range is counted, once, and nothing else. */
class KvModelTest {
    private static final int TOKENS = 40;

    private static long[] slots() {
        long[] slots = new long[TOKENS];
        int[] table = {2, 0, 3};
        for (int t = 0; t < TOKENS; t++) {
            slots[t] = (long) table[t / TinyPagedKv.BLOCK] * TinyPagedKv.BLOCK + t % TinyPagedKv.BLOCK;
        }
        return slots;
    }

    @Test
    void computedKvHasNoMismatchAndEachFlippedByteCountsOnce() {
        int[] tokens = new int[TOKENS];
        for (int t = 0; t < TOKENS; t++) {
            tokens[t] = 1000 + 7 * t;
        }
        long[] hashes = KvModel.prefixHashes(tokens);
        long[] slots = slots();
        try (Arena arena = Arena.ofConfined()) {
            PagedKvCache kv = TinyPagedKv.create(arena);
            KvModel.compute(kv, hashes, slots, 0, TOKENS);
            assertEquals(0, KvModel.mismatchingBytes(kv, hashes, slots, 0, TOKENS));

            TinyPagedKv.flip(kv, 0, 0, slots[0], 0);
            assertEquals(1, KvModel.mismatchingBytes(kv, hashes, slots, 0, TOKENS), "one flipped byte");
            TinyPagedKv.flip(kv, 0, 0, slots[0], 1); // the same 8-byte word
            TinyPagedKv.flip(kv, 2, 1, slots[TOKENS - 1], (int) kv.vectorBytes() - 1); // the last byte of the range
            assertEquals(3, KvModel.mismatchingBytes(kv, hashes, slots, 0, TOKENS));
            assertEquals(1, KvModel.mismatchingBytes(kv, hashes, slots, 1, TOKENS), "only the range is checked");
            assertEquals(2, KvModel.mismatchingBytes(kv, hashes, slots, 0, 1));
        }
    }

    @Test
    void kvComputedForAnotherPrefixMismatches() {
        int[] tokens = {5, 6, 7, 8};
        int[] other = {9, 6, 7, 8}; // the same last three tokens after a different first one
        long[] slots = {3, 17, 40, 63};
        try (Arena arena = Arena.ofConfined()) {
            PagedKvCache kv = TinyPagedKv.create(arena);
            KvModel.compute(kv, KvModel.prefixHashes(other), slots, 0, 4);
            long bytesPerToken = KvModel.bytesPerToken(kv);
            long bad = KvModel.mismatchingBytes(kv, KvModel.prefixHashes(tokens), slots, 1, 4);
            assertEquals(true, bad > 3 * bytesPerToken * 9 / 10, "KV depends on the whole prefix: " + bad + " of "
                    + 3 * bytesPerToken + " bytes differ");
        }
    }
}
