package lmcache4j.allocator.tensor;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

import lmcache4j.allocator.host.HostArena;

/**
 * The host regions behind an allocator's address space, laid end to end: region i covers
 * {@code [base[i], base[i] + size[i])}. A pool that grows appends regions; the free-block index
 * keeps a boundary at each region start so no slice spans two.
 */
final class Regions {
    private HostArena[] arenas = new HostArena[4];
    /** Each arena's segment, fetched once: slicing is the allocation fast path. */
    private MemorySegment[] segments = new MemorySegment[4];
    private long[] bases = new long[4];
    private int count;
    private long end;

    /** Appends {@code arena} at the current end; returns its base offset. */
    long append(HostArena arena) {
        if (count == arenas.length) {
            arenas = Arrays.copyOf(arenas, count * 2);
            segments = Arrays.copyOf(segments, count * 2);
            bases = Arrays.copyOf(bases, count * 2);
        }
        long base = end;
        arenas[count] = arena;
        segments[count] = arena.segment();
        bases[count] = base;
        count++;
        end += arena.byteSize();
        return base;
    }

    /** The bytes {@code [offset, offset + length)}, which must lie inside one region. */
    MemorySegment slice(long offset, long length) {
        int i = Arrays.binarySearch(bases, 0, count, offset);
        if (i < 0) {
            i = -i - 2; // the region starting before offset
        }
        return segments[i].asSlice(offset - bases[i], length);
    }

    /** Each region's {@link HostArena#description()}, joined. */
    String description() {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < count; i++) {
            text.append(i == 0 ? "" : "; ").append(arenas[i].description());
        }
        return text.toString();
    }

    /** Whether every region is pinned by CUDA. */
    boolean allCudaPinned() {
        for (int i = 0; i < count; i++) {
            if (!arenas[i].kind().cudaPinned()) {
                return false;
            }
        }
        return count > 0;
    }

    /** Total bytes. */
    long end() {
        return end;
    }

    /** Closes every region, keeping the first failure and going on with the rest. */
    void closeAll() {
        RuntimeException first = null;
        for (int i = 0; i < count; i++) {
            try {
                arenas[i].close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
