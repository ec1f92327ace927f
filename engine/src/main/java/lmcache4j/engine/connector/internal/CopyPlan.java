package lmcache4j.engine.connector.internal;

import java.util.Arrays;

/**
 * The contiguous byte runs that move one chunk (or one layer of it) between paged KV buffers and a
 * {@code MemoryObj}: {@code (layer buffer, paged offset, object offset, length)}, with runs that
 * touch on both sides merged into one. Reusable: {@link #clear()} keeps the arrays, so planning in
 * steady state allocates nothing.
 */
public final class CopyPlan {
    private int count;
    private int[] layer = new int[64];
    private long[] paged = new long[64];
    private long[] object = new long[64];
    private long[] length = new long[64];
    private long totalBytes;
    /** Scratch for {@link CopyPlanner}: runs of consecutive tokens contiguous in the paged buffers. */
    int[] tokenRunStart = new int[16];
    int[] tokenRunLength = new int[16];

    /** Empties the plan, keeping its capacity. */
    public void clear() {
        count = 0;
        totalBytes = 0;
    }

    /** Adds a run, merging it into the previous one when both sides continue it. */
    public void add(int layerIndex, long pagedOffset, long objectOffset, long bytes) {
        totalBytes += bytes;
        int last = count - 1;
        if (last >= 0 && layer[last] == layerIndex && paged[last] + length[last] == pagedOffset
                && object[last] + length[last] == objectOffset) {
            length[last] += bytes;
            return;
        }
        if (count == layer.length) {
            int grown = count * 2;
            layer = Arrays.copyOf(layer, grown);
            paged = Arrays.copyOf(paged, grown);
            object = Arrays.copyOf(object, grown);
            length = Arrays.copyOf(length, grown);
        }
        layer[count] = layerIndex;
        paged[count] = pagedOffset;
        object[count] = objectOffset;
        length[count] = bytes;
        count++;
    }

    /** Makes room for {@code n} token runs, keeping those recorded. */
    void ensureTokenRuns(int n) {
        if (n > tokenRunStart.length) {
            int grown = Math.max(n, tokenRunStart.length * 2);
            tokenRunStart = Arrays.copyOf(tokenRunStart, grown);
            tokenRunLength = Arrays.copyOf(tokenRunLength, grown);
        }
    }

    /** Runs in the plan. */
    public int runs() {
        return count;
    }

    /** The layer buffer run {@code i} reads or writes. */
    public int layer(int i) {
        return layer[i];
    }

    /** Run {@code i}'s byte offset in its layer buffer. */
    public long pagedOffset(int i) {
        return paged[i];
    }

    /** Run {@code i}'s byte offset in the object. */
    public long objectOffset(int i) {
        return object[i];
    }

    /** Run {@code i}'s length in bytes. */
    public long length(int i) {
        return length[i];
    }

    /** Bytes the plan moves. */
    public long totalBytes() {
        return totalBytes;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("CopyPlan[" + count + " runs, " + totalBytes + " bytes");
        for (int i = 0; i < Math.min(count, 8); i++) {
            sb.append(", L").append(layer[i]).append(':').append(paged[i]).append("->").append(object[i])
                    .append('+').append(length[i]);
        }
        return sb.append(count > 8 ? ", …]" : "]").toString();
    }
}
