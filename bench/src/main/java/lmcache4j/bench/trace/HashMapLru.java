package lmcache4j.bench.trace;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The speed limit a replay is measured against: the same chunk accesses on a plain
 * {@link LinkedHashMap} in access order (an LRU in a dozen lines: a lookup walks the request's
 * prefix with {@code get}, the rest is {@code put}, the eldest entry goes when full). No tiers, no
 * memory, no locks, no pins.
 */
final class HashMapLru {
    private HashMapLru() {
    }

    /** Replays {@code t} on a map of {@code capacity} chunks; returns the hits (so the work cannot be skipped). */
    static long replay(ChunkTrace t, int capacity) {
        LinkedHashMap<Integer, Boolean> map = new LinkedHashMap<>(capacity * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Integer, Boolean> eldest) {
                return size() > capacity;
            }
        };
        long hits = 0;
        for (int r = 0; r < t.requests(); r++) {
            int i = t.start[r];
            int to = t.start[r + 1];
            while (i < to && map.get(t.chunks[i]) != null) {
                i++;
            }
            hits += i - t.start[r];
            for (; i < to; i++) {
                map.putIfAbsent(t.chunks[i], Boolean.TRUE);
            }
        }
        return hits;
    }
}
