package lmcache4j.bench.trace;

/**
 * A trace's full chunks as flat arrays, the form the offline computations ({@link LruCurve},
 * {@link Belady}) walk: request {@code r}'s chunks are {@code chunks[start[r] .. start[r + 1])}, in
 * prefix order, numbered densely ({@code chunkTokens}-token chunks, {@code chunksPerBlock} per block,
 * chunk {@code c} of block {@code b} being {@code b * chunksPerBlock + c}). Only full blocks count:
 * a serving engine never stores a prompt's partial last block.
 */
final class ChunkTrace {
    final int[] chunks;
    final int[] start;
    final int distinctIds;
    final int chunksPerBlock;

    private ChunkTrace(int[] chunks, int[] start, int distinctIds, int chunksPerBlock) {
        this.chunks = chunks;
        this.start = start;
        this.distinctIds = distinctIds;
        this.chunksPerBlock = chunksPerBlock;
    }

    static ChunkTrace of(Trace trace, int chunkTokens) {
        if (chunkTokens < 1 || trace.blockTokens() % chunkTokens != 0) {
            throw new IllegalArgumentException("chunk tokens " + chunkTokens + " must divide the trace's block of "
                    + trace.blockTokens() + " tokens");
        }
        int perBlock = trace.blockTokens() / chunkTokens;
        int[] start = new int[trace.requests().size() + 1];
        long total = 0;
        for (int r = 0; r < trace.requests().size(); r++) {
            total += (long) trace.requests().get(r).fullBlocks(trace.blockTokens()) * perBlock;
        }
        int[] chunks = new int[Math.toIntExact(total)];
        int at = 0;
        for (int r = 0; r < trace.requests().size(); r++) {
            Trace.Request req = trace.requests().get(r);
            start[r] = at;
            int full = req.fullBlocks(trace.blockTokens());
            for (int b = 0; b < full; b++) {
                for (int c = 0; c < perBlock; c++) {
                    chunks[at++] = req.blockIds()[b] * perBlock + c;
                }
            }
        }
        start[trace.requests().size()] = at;
        return new ChunkTrace(chunks, start, Math.multiplyExact(trace.blocks(), perBlock), perBlock);
    }

    int requests() {
        return start.length - 1;
    }

    /** How many of the chunk ids appear: a cache of this many chunks holds everything. */
    int distinctChunks() {
        boolean[] seen = new boolean[distinctIds];
        int n = 0;
        for (int c : chunks) {
            if (!seen[c]) {
                seen[c] = true;
                n++;
            }
        }
        return n;
    }

    /** Hits of an infinite cache: each request's chunks up to the first never seen before. */
    long infiniteHits() {
        boolean[] seen = new boolean[distinctIds];
        long hits = 0;
        for (int r = 0; r < requests(); r++) {
            boolean prefix = true;
            for (int i = start[r]; i < start[r + 1]; i++) {
                prefix &= seen[chunks[i]];
                if (prefix) {
                    hits++;
                }
            }
            for (int i = start[r]; i < start[r + 1]; i++) {
                seen[chunks[i]] = true;
            }
        }
        return hits;
    }
}
