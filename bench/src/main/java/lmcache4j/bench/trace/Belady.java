package lmcache4j.bench.trace;

import java.util.Arrays;
import java.util.PriorityQueue;

/**
 * Belady's MIN, computed offline from the trace itself: the reference no online policy can beat,
 * never a policy a cache could run. At each request the cached chunks' next uses are known; a chunk
 * to store goes in only if some cached chunk is needed later than it (that one is evicted), and a
 * chunk never used again is not stored. Ties go to the chunk deeper in its request, so tails leave
 * before heads and what stays is a usable prefix. Hits obey the prefix rule, as in the replay: a
 * request's hits stop at its first chunk not cached.
 */
public final class Belady {
    private Belady() {
    }

    /** Hits of MIN with a cache of {@code capacity} chunks of {@code chunkTokens}. */
    public static long hits(Trace trace, int chunkTokens, int capacity) {
        return hits(ChunkTrace.of(trace, chunkTokens), capacity);
    }

    static long hits(ChunkTrace t, int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be positive, was " + capacity);
        }
        int never = Integer.MAX_VALUE;
        int[] nextUse = nextUses(t, never);
        // Per chunk id: the (next use, position) it is cached under; -1 when not cached.
        long[] key = new long[t.distinctIds];
        Arrays.fill(key, -1);
        PriorityQueue<long[]> furthest = new PriorityQueue<>((a, b) -> Long.compare(b[0], a[0])); // {key, id}
        int cached = 0;
        long hits = 0;
        for (int r = 0; r < t.requests(); r++) {
            int from = t.start[r];
            int to = t.start[r + 1];
            int h = 0;
            while (from + h < to && key[t.chunks[from + h]] >= 0) {
                h++;
            }
            hits += h;
            for (int i = from; i < to; i++) { // every cached chunk of the request is now due at its next use
                int c = t.chunks[i];
                if (key[c] >= 0) {
                    key[c] = order(nextUse[i], i - from);
                    furthest.add(new long[]{key[c], c});
                }
            }
            for (int i = from + h; i < to; i++) {
                int c = t.chunks[i];
                if (key[c] >= 0 || nextUse[i] == never) {
                    continue; // held already, or never used again: not worth a place
                }
                long mine = order(nextUse[i], i - from);
                while (cached >= capacity) {
                    long[] top = furthest.peek();
                    if (key[(int) top[1]] != top[0]) {
                        furthest.poll(); // stale
                        continue;
                    }
                    if (top[0] <= mine) {
                        break; // everything cached is needed sooner: skip this one
                    }
                    furthest.poll();
                    key[(int) top[1]] = -1;
                    cached--;
                }
                if (cached < capacity) {
                    key[c] = mine;
                    furthest.add(new long[]{mine, c});
                    cached++;
                }
            }
        }
        return hits;
    }

    /** Sorts by next use, then by depth in the request (deeper first out). */
    private static long order(int nextUse, int depth) {
        return ((long) nextUse << 20) | Math.min(depth, (1 << 20) - 1);
    }

    /** For each access, the index of the next request using its chunk, or {@code never}. */
    private static int[] nextUses(ChunkTrace t, int never) {
        int[] next = new int[t.chunks.length];
        int[] seenAt = new int[t.distinctIds];
        Arrays.fill(seenAt, never);
        for (int r = t.requests() - 1; r >= 0; r--) {
            for (int i = t.start[r]; i < t.start[r + 1]; i++) {
                next[i] = seenAt[t.chunks[i]];
            }
            for (int i = t.start[r]; i < t.start[r + 1]; i++) {
                seenAt[t.chunks[i]] = r;
            }
        }
        return next;
    }
}
