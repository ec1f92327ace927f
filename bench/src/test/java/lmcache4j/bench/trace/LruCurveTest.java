package lmcache4j.bench.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * The one-pass curve against full replays: exactly the hits of a plain LRU replay that marks a
 * request's chunks used first chunk last (the order the curve models), at every capacity tried; and
 * within 1 % of the engine's own LRU replay (LMCache's touch-then-store order) through its tiers.
 */
class LruCurveTest {
    /** A full replay of the LRU the curve models, one capacity at a time. */
    static long replay(ChunkTrace t, int capacity) {
        LinkedHashMap<Integer, Boolean> lru = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Integer, Boolean> eldest) {
                return size() > capacity;
            }
        };
        long hits = 0;
        for (int r = 0; r < t.requests(); r++) {
            int i = t.start[r];
            while (i < t.start[r + 1] && lru.containsKey(t.chunks[i])) {
                i++;
            }
            hits += i - t.start[r];
            for (int j = t.start[r + 1] - 1; j >= t.start[r]; j--) {
                lru.put(t.chunks[j], Boolean.TRUE); // used: the first chunk ends up the most recent
            }
        }
        return hits;
    }

    @Test
    void theCurveIsExactlyAFullReplayAtEveryCapacityTried() {
        Trace trace = TraceFile.bundled().prefix(3000);
        ChunkTrace t = ChunkTrace.of(trace, 512);
        LruCurve curve = LruCurve.of(t);
        for (int capacity : new int[]{1, 2, 7, 50, 333, 1000, 4096, 12000, curve.distinctChunks()}) {
            assertEquals(replay(t, capacity), curve.hits(capacity), "capacity " + capacity);
        }
        assertEquals(t.infiniteHits(), curve.hits(curve.distinctChunks()));
        assertEquals(t.infiniteHits(), curve.hits(Long.MAX_VALUE / 2));
    }

    @Test
    void theCurveFollowsThePrefixRule() throws Exception {
        // 1 2 3; then 4 3 (no hit: 4 is new, and 3 after a miss does not count); then 1 2 3 again, when
        // 1 has 2 more recent chunks above it (4, 3), 2 has 3 (4, 3, 1) and 3 has 1 (4)
        Trace trace = TraceFileTest.parse("{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n"
                + "{\"timestamp\": 1, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [4, 3]}\n"
                + "{\"timestamp\": 2, \"input_length\": 1536, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n");
        LruCurve curve = LruCurve.of(trace, 512);
        assertEquals(0, curve.hits(2));
        assertEquals(1, curve.hits(3), "3 is cached at 3 chunks too, but 2 before it is not: only 1 hits");
        assertEquals(3, curve.hits(4));
        for (int c = 1; c <= 4; c++) {
            assertEquals(replay(ChunkTrace.of(trace, 512), c), curve.hits(c), "capacity " + c);
        }
    }

    @Test
    void theCurveIsWithinOnePercentOfTheEnginesLruReplay() {
        Trace trace = TraceFile.bundled().prefix(1500);
        LruCurve curve = LruCurve.of(trace, 512);
        for (int capacity : new int[]{200, 1000, 4000}) {
            long engine = TraceSweep.replay(trace, EngineReplay.Settings.cpu("LRU", capacity, 512,
                    EngineReplay.Mode.METADATA)).hitChunks();
            long modelled = curve.hits(capacity);
            assertTrue(Math.abs(engine - modelled) <= modelled / 100, "capacity " + capacity + ": engine " + engine
                    + ", curve " + modelled);
        }
    }
}
