package lmcache4j.bench.trace;

/**
 * The hit count of LRU at every capacity, in one pass over a trace (Mattson et al.'s stack
 * distances, 1970), with the prefix rule: a chunk is a hit at capacity {@code C} only when it and
 * every chunk before it in its request were among the {@code C} most recently used. The LRU it
 * models marks all of a request's chunks used, its first chunk the most recent (tails are evicted
 * before heads); that order is the same at every capacity, which is what makes one pass enough. The
 * engine's LRU replay ({@link EngineReplay}) differs only in the order of one request's own chunks
 * (LMCache touches the hits, then appends the stored ones) and lands within a fraction of a percent
 * ({@code LruCurveTest} holds both to it).
 *
 * <p>Distances come from a Fenwick tree over use times: O(log n) per chunk.
 */
public final class LruCurve {
    /** {@code hitsBelow[c]}: hits at capacity {@code c} chunks, for {@code c} up to every distinct chunk. */
    private final long[] hitsAt;
    private final long accesses;

    private LruCurve(long[] hitsAt, long accesses) {
        this.hitsAt = hitsAt;
        this.accesses = accesses;
    }

    /** The curve of {@code trace} in chunks of {@code chunkTokens}. */
    public static LruCurve of(Trace trace, int chunkTokens) {
        return of(ChunkTrace.of(trace, chunkTokens));
    }

    static LruCurve of(ChunkTrace t) {
        int[] lastUse = new int[t.distinctIds];
        java.util.Arrays.fill(lastUse, -1);
        Fenwick marks = new Fenwick(t.chunks.length + 1);
        int distinct = 0;
        long[] atDepth = new long[t.distinctIds + 2]; // chunks whose prefix's deepest distance is d
        int time = 0;
        int marked = 0;
        for (int r = 0; r < t.requests(); r++) {
            int from = t.start[r];
            int to = t.start[r + 1];
            long prefixMax = -1;
            for (int i = from; i < to; i++) {
                int last = lastUse[t.chunks[i]];
                long d = last < 0 ? Long.MAX_VALUE : marked - marks.sum(last + 1); // more recent distinct chunks
                prefixMax = Math.max(prefixMax, d);
                if (prefixMax != Long.MAX_VALUE) {
                    atDepth[(int) prefixMax]++; // a hit at every capacity above its prefix's deepest distance
                }
            }
            for (int i = to - 1; i >= from; i--) { // the first chunk ends up the most recent
                int c = t.chunks[i];
                if (lastUse[c] >= 0) {
                    marks.add(lastUse[c], -1);
                } else {
                    marked++;
                    distinct++;
                }
                lastUse[c] = time;
                marks.add(time, 1);
                time++;
            }
        }
        long[] hitsAt = new long[distinct + 1];
        long sum = 0;
        for (int c = 1; c <= distinct; c++) {
            sum += atDepth[c - 1]; // distance c - 1 fits in c chunks
            hitsAt[c] = sum;
        }
        return new LruCurve(hitsAt, t.chunks.length);
    }

    /** Hits at a capacity of {@code chunks} (all hits an LRU can have beyond the trace's distinct chunks). */
    public long hits(long chunks) {
        if (chunks < 0) {
            throw new IllegalArgumentException("capacity " + chunks);
        }
        return hitsAt[(int) Math.min(chunks, hitsAt.length - 1)];
    }

    /** Full-chunk lookups of the trace. */
    public long accesses() {
        return accesses;
    }

    /** The largest capacity that matters: every distinct chunk. */
    public int distinctChunks() {
        return hitsAt.length - 1;
    }

    /** The smallest capacity whose hits reach {@code target}; the distinct chunks when none does. */
    public long capacityFor(long target) {
        int lo = 0;
        int hi = hitsAt.length - 1;
        if (hitsAt[hi] < target) {
            return hi;
        }
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (hitsAt[mid] >= target) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }

    /** A Fenwick (binary indexed) tree of counts over positions {@code 0..n-1}. */
    private static final class Fenwick {
        private final int[] tree;

        Fenwick(int n) {
            tree = new int[n + 1];
        }

        void add(int position, int delta) {
            for (int i = position + 1; i < tree.length; i += i & -i) {
                tree[i] += delta;
            }
        }

        /** The count over positions {@code [0, position)}. */
        int sum(int position) {
            int s = 0;
            for (int i = position; i > 0; i -= i & -i) {
                s += tree[i];
            }
            return s;
        }
    }
}
