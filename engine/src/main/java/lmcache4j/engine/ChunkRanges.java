package lmcache4j.engine;

import java.util.ArrayList;
import java.util.List;

import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkRange;

/** Small sums over a request's chunk ranges. */
final class ChunkRanges {
    private ChunkRanges() {
    }

    /** The ranges' keys, in order. */
    static List<CacheKey> keysOf(List<ChunkRange> ranges) {
        List<CacheKey> keys = new ArrayList<>(ranges.size());
        for (ChunkRange r : ranges) {
            keys.add(r.key());
        }
        return keys;
    }

    /** The tokens the ranges cover. */
    static int tokensIn(List<ChunkRange> ranges) {
        int tokens = 0;
        for (ChunkRange r : ranges) {
            tokens += r.length();
        }
        return tokens;
    }
}
