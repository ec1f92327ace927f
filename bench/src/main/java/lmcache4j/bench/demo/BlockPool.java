package lmcache4j.bench.demo;

import java.util.SplittableRandom;

/**
 * The free blocks of a paged KV cache, handed out in random order as a serving engine's block
 * manager does after a while of allocating and freeing: a request's block table is a random
 * selection of blocks, so consecutive tokens' blocks are scattered over the cache.
 */
final class BlockPool {
    private final int[] free;
    private int freeCount;
    private final SplittableRandom random;

    BlockPool(int blocks, long seed) {
        free = new int[blocks];
        for (int b = 0; b < blocks; b++) {
            free[b] = b;
        }
        freeCount = blocks;
        random = new SplittableRandom(seed);
    }

    /** {@code n} blocks drawn at random from the free ones. */
    int[] allocate(int n) {
        if (n > freeCount) {
            throw new IllegalStateException("the paged cache has " + freeCount + " free blocks, a request needs " + n);
        }
        int[] table = new int[n];
        for (int i = 0; i < n; i++) {
            int j = random.nextInt(freeCount);
            table[i] = free[j];
            free[j] = free[--freeCount];
        }
        return table;
    }

    /** Gives the blocks of {@code table} back. */
    void free(int[] table) {
        for (int b : table) {
            free[freeCount++] = b;
        }
    }

    int freeBlocks() {
        return freeCount;
    }

    /** The slot of every token of a sequence of {@code tokens} laid out on {@code table}. */
    static long[] slots(int[] table, int blockSize, int tokens) {
        long[] slots = new long[tokens];
        for (int t = 0; t < tokens; t++) {
            slots[t] = (long) table[t / blockSize] * blockSize + t % blockSize;
        }
        return slots;
    }
}
