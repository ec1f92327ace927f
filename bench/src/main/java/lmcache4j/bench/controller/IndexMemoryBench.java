package lmcache4j.bench.controller;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.ref.Reference;
import java.util.SplittableRandom;

import lmcache4j.server.controller.index.ChunkIndex;
import lmcache4j.server.controller.index.Holder;

/**
 * Bytes per (chunk, holder) entry of the controller's index at a given size: the index is filled
 * as engines would fill it (random 64-bit keys, each held by one instance, every other one by a
 * second instance too) and measured two ways: the bytes its arrays hold
 * ({@link ChunkIndex#memoryBytes()}) and the growth of the used heap after a full GC, which also
 * catches anything the first count misses.
 */
public final class IndexMemoryBench {
    private IndexMemoryBench() {
    }

    /** The measurement. */
    public record Result(long entries, long keys, int holders, long structureBytes, long heapBytes, double fillSeconds) {
        public double bytesPerEntry() {
            return (double) structureBytes / entries;
        }

        public double heapBytesPerEntry() {
            return (double) heapBytes / entries;
        }
    }

    /** Fills an index to {@code entries} (chunk, holder) entries over {@code instances} instances. */
    public static Result run(long entries, int instances, long seed, PrintStream progress) {
        if (entries < 2 || entries > Integer.MAX_VALUE || instances < 2) {
            throw new IllegalArgumentException("entries must be 2..2^31-1 and instances at least 2, were " + entries
                    + ", " + instances);
        }
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long before = usedAfterGc(memory);
        progress.printf("controller bench: filling an index to %,d entries over %d instances%n", entries, instances);
        ChunkIndex index = new ChunkIndex(16); // grows as it fills, so the figure is the structure's at any size
        SplittableRandom random = new SplittableRandom(seed);
        long keys = 0;
        long t0 = System.nanoTime();
        try (ChunkIndex.Batch b = index.batch()) {
            int[] ids = new int[instances];
            for (int i = 0; i < instances; i++) {
                ids[i] = b.holder(new Holder("instance-" + i, 0, "LocalCPUBackend"));
            }
            long made = 0;
            while (made < entries) {
                long key = random.nextLong();
                int first = (int) (keys % instances);
                keys++;
                if (b.admit(ids[first], key)) {
                    made++;
                }
                if ((keys & 1) == 0 && made < entries && b.admit(ids[(first + 1) % instances], key)) {
                    made++;
                }
            }
        }
        double fill = (System.nanoTime() - t0) / 1e9;
        long structure = index.memoryBytes();
        long heap = usedAfterGc(memory) - before;
        long held = index.entries();
        Reference.reachabilityFence(index);
        return new Result(held, keys, instances, structure, heap, fill);
    }

    private static long usedAfterGc(MemoryMXBean memory) {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return memory.getHeapMemoryUsage().getUsed();
    }
}
