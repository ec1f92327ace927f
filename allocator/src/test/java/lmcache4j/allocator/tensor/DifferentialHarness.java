package lmcache4j.allocator.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import lmcache4j.allocator.tensor.LinearFirstFitModel.Block;
import lmcache4j.allocator.tensor.internal.FreeBlockIndex;

/**
 * Drives a {@link FreeBlockIndex} and a {@link LinearFirstFitModel} with the same operations over a
 * pool that starts as one free block, tracks the live allocations, and asserts that both make the
 * same decisions and that memory is accounted for exactly.
 */
final class DifferentialHarness {
    private final FreeBlockIndex index = new FreeBlockIndex();
    private final LinearFirstFitModel model = new LinearFirstFitModel();
    /** Live allocations as {start, size}; order is irrelevant, picks are by position. */
    private final List<long[]> live = new ArrayList<>();
    private long capacity;

    DifferentialHarness(long capacity) {
        this.capacity = capacity;
        index.free(0, capacity);
        model.free(0, capacity);
        checkAll();
    }

    /** First-fit allocation in both; returns the address or -1. */
    long allocate(long size) {
        long expected = model.allocateFirstFit(size);
        long actual = index.allocateFirstFit(size);
        assertEquals(expected, actual, () -> "allocateFirstFit(" + size + ") on " + model);
        if (actual >= 0) {
            live.add(new long[] {actual, size});
        }
        return actual;
    }

    /** Batched allocation in both; every slot becomes its own live allocation. */
    void allocateBatch(long unit, int count) {
        long[] expected = new long[count];
        long[] actual = new long[count];
        boolean modelOk = model.allocateBatch(unit, count, expected);
        boolean indexOk = index.allocateBatch(unit, count, actual);
        assertEquals(modelOk, indexOk, () -> "allocateBatch(" + unit + ", " + count + ") on " + model);
        assertArrayEquals(expected, actual, () -> "allocateBatch(" + unit + ", " + count + ") slots");
        if (indexOk) {
            for (int i = 1; i < count; i++) {
                assertTrue(actual[i - 1] + unit <= actual[i], () -> "slots not ascending: " + Arrays.toString(actual));
            }
            for (long slot : actual) {
                live.add(new long[] {slot, unit});
            }
        }
    }

    /** Frees the live allocation at {@code pick} modulo the number live; nothing if none is live. */
    void freeOne(int pick) {
        if (live.isEmpty()) {
            return;
        }
        int i = Math.floorMod(pick, live.size());
        long[] a = live.get(i);
        live.set(i, live.getLast());
        live.removeLast();
        freeBoth(a[0], a[1]);
    }

    /** Frees a random subset of the live allocations in a random order. */
    void freeSome(long seed) {
        Random random = new Random(seed);
        Collections.shuffle(live, random);
        int n = random.nextInt(live.size() + 1);
        for (int i = 0; i < n; i++) {
            long[] a = live.removeLast();
            freeBoth(a[0], a[1]);
        }
    }

    /** Appends a region at the current end, LMCache's lazy-allocator growth: a boundary, then a free. */
    void grow(long size) {
        index.addBoundary(capacity);
        model.addBoundary(capacity);
        freeBoth(capacity, size);
        capacity += size;
    }

    /** Adds a boundary at an arbitrary address in both; a free block spanning it is split. */
    void addBoundary(long address) {
        index.addBoundary(address);
        model.addBoundary(address);
    }

    /** Frees a range overlapping the free block at {@code pick}: both must refuse and change nothing. */
    void doubleFree(int pick, long length) {
        List<Block> free = model.blocks();
        if (free.isEmpty()) {
            return;
        }
        Block b = free.get(Math.floorMod(pick, free.size()));
        long start = b.start() + Math.floorMod(length * 31, b.size()); // somewhere inside the block
        IllegalStateException m = assertThrows(IllegalStateException.class, () -> model.free(start, length));
        IllegalStateException x = assertThrows(IllegalStateException.class, () -> index.free(start, length));
        assertEquals(m.getMessage(), x.getMessage());
    }

    /**
     * Allocates 1 to {@code maxPages}-page blocks until the pool is full, then frees about half of
     * them in address order, leaving thousands of free fragments.
     */
    void fragment(long seed, long page, int maxPages) {
        Random random = new Random(seed);
        while (allocate(page * (1 + random.nextInt(maxPages))) >= 0) {
            // keep filling
        }
        // Sequential first fit from one block hands out ascending addresses, so this frees in address
        // order and the model only ever appends: setup stays cheap.
        List<long[]> kept = new ArrayList<>();
        for (long[] a : live) {
            if (random.nextBoolean()) {
                freeBoth(a[0], a[1]);
            } else {
                kept.add(a);
            }
        }
        live.clear();
        live.addAll(kept);
    }

    private void freeBoth(long start, long size) {
        model.free(start, size);
        index.free(start, size);
    }

    /** The cheap comparisons: counters and the largest block. */
    void checkSummary() {
        assertEquals(model.freeBytes(), index.freeBytes(), "freeBytes");
        assertEquals(model.blockCount(), index.blockCount(), "blockCount");
        assertEquals(model.largestBlock(), index.largestBlock(), "largestBlock");
    }

    /** Everything: identical block lists, the index's invariants, and exact accounting of memory. */
    void checkAll() {
        checkSummary();
        List<Block> blocks = new ArrayList<>();
        index.forEach((s, n) -> blocks.add(new Block(s, n)));
        assertEquals(model.blocks(), blocks);
        index.checkInvariants();
        assertTrue(index.isFullyCoalesced());
        assertTrue(model.isFullyCoalesced());

        // Live and free ranges together must tile [0, capacity) exactly: disjoint, inside, summing up.
        long[][] ranges = new long[live.size() + blocks.size()][];
        int r = 0;
        long liveBytes = 0;
        for (long[] a : live) {
            ranges[r++] = a;
            liveBytes += a[1];
        }
        for (Block b : blocks) {
            ranges[r++] = new long[] {b.start(), b.size()};
        }
        Arrays.sort(ranges, (a, b) -> Long.compare(a[0], b[0]));
        long prevEnd = 0;
        for (long[] range : ranges) {
            if (range[0] < prevEnd) {
                fail("range [" + range[0] + ", " + (range[0] + range[1]) + ") overlaps one ending at " + prevEnd);
            }
            prevEnd = range[0] + range[1];
        }
        assertTrue(prevEnd <= capacity, () -> "a range ends past the capacity " + capacity);
        assertEquals(capacity, liveBytes + index.freeBytes(), "live + free bytes");
    }

    int liveCount() {
        return live.size();
    }

    int freeBlockCount() {
        return index.blockCount();
    }
}
