package lmcache4j.bench.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

/**
 * Belady's MIN against the true optimum where MIN is provably optimal: requests of one chunk each (no
 * prefix to respect), where a cache may store or skip each missed chunk and evict anything. The
 * optimum is found by exhaustive search over every such choice, on random short traces.
 */
class BeladyTest {
    private static final int IDS = 5;

    /** Requests of one full block each, with these block ids. */
    private static Trace singles(int[] ids) {
        List<Trace.Request> requests = new ArrayList<>();
        for (int i = 0; i < ids.length; i++) {
            requests.add(new Trace.Request(i + 1, i, 512, 1, new int[]{ids[i]}));
        }
        return new Trace("singles", 512, requests, IDS);
    }

    /** The most hits any cache of {@code capacity} chunks can have from position {@code at} on, holding {@code held}. */
    private static int optimum(int[] ids, int at, int held, int capacity, Map<Long, Integer> memo) {
        if (at == ids.length) {
            return 0;
        }
        long state = (long) at << 32 | held;
        Integer known = memo.get(state);
        if (known != null) {
            return known;
        }
        int bit = 1 << ids[at];
        int best;
        if ((held & bit) != 0) {
            best = 1 + optimum(ids, at + 1, held, capacity, memo);
        } else {
            best = optimum(ids, at + 1, held, capacity, memo); // skip storing it
            if (Integer.bitCount(held) < capacity) {
                best = Math.max(best, optimum(ids, at + 1, held | bit, capacity, memo));
            } else {
                for (int victim = 0; victim < IDS; victim++) {
                    if ((held & 1 << victim) != 0) {
                        best = Math.max(best, optimum(ids, at + 1, (held & ~(1 << victim)) | bit, capacity, memo));
                    }
                }
            }
        }
        memo.put(state, best);
        return best;
    }

    @Test
    void minEqualsTheExhaustiveOptimumOnSingleChunkRequests() {
        SplittableRandom random = new SplittableRandom(36);
        for (int trial = 0; trial < 300; trial++) {
            int[] ids = new int[8 + random.nextInt(10)];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = random.nextInt(IDS);
            }
            for (int capacity = 1; capacity < IDS; capacity++) {
                int optimum = optimum(ids, 0, 0, capacity, new HashMap<>());
                assertEquals(optimum, Belady.hits(singles(ids), 512, capacity),
                        "ids " + java.util.Arrays.toString(ids) + " at capacity " + capacity);
            }
        }
    }

    @Test
    void aHandWorkedTrace() {
        // capacity 2: a b c a b c a. MIN stores a, b; skips c (a and b are needed sooner); a and b
        // hit; the second c is needed later than nothing left (never again): a and b stay; a hits.
        assertEquals(3, Belady.hits(singles(new int[]{0, 1, 2, 0, 1, 2, 0}), 512, 2));
    }
}
