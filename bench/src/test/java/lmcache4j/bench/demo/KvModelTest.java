package lmcache4j.bench.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import lmcache4j.allocator.DType;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import org.junit.jupiter.api.Test;

/** The demo's verifier: every damaged byte of the checked range is counted, once, and nothing else. */
class KvModelTest {
    private static final int BLOCKS = 4;
    private static final int BLOCK = 16;
    private static final int TOKENS = 40;

    private static PagedKvCache cache(Arena arena) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, 2, 8, DType.BFLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < 3; l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, 2, 8, DType.BFLOAT16);
    }

    private static long[] slots() {
        long[] slots = new long[TOKENS];
        int[] table = {2, 0, 3};
        for (int t = 0; t < TOKENS; t++) {
            slots[t] = (long) table[t / BLOCK] * BLOCK + t % BLOCK;
        }
        return slots;
    }

    private static void flip(PagedKvCache kv, int layer, int plane, long slot, int byteInVector) {
        MemorySegment s = kv.layers().get(layer);
        long at = kv.offset(plane, slot) + byteInVector;
        s.set(ValueLayout.JAVA_BYTE, at, (byte) ~s.get(ValueLayout.JAVA_BYTE, at));
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
            PagedKvCache kv = cache(arena);
            KvModel.compute(kv, hashes, slots, 0, TOKENS);
            assertEquals(0, KvModel.mismatchingBytes(kv, hashes, slots, 0, TOKENS));

            flip(kv, 0, 0, slots[0], 0);
            assertEquals(1, KvModel.mismatchingBytes(kv, hashes, slots, 0, TOKENS), "one flipped byte");
            flip(kv, 0, 0, slots[0], 1); // the same 8-byte word
            flip(kv, 2, 1, slots[TOKENS - 1], (int) kv.vectorBytes() - 1); // the last byte of the range
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
            PagedKvCache kv = cache(arena);
            KvModel.compute(kv, KvModel.prefixHashes(other), slots, 0, 4);
            long bytesPerToken = KvModel.bytesPerToken(kv);
            long bad = KvModel.mismatchingBytes(kv, KvModel.prefixHashes(tokens), slots, 1, 4);
            assertEquals(true, bad > 3 * bytesPerToken * 9 / 10, "KV depends on the whole prefix: " + bad + " of "
                    + 3 * bytesPerToken + " bytes differ");
        }
    }
}
