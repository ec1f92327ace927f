package lmcache4j.bench.controller;

import java.util.SplittableRandom;

import lmcache4j.server.controller.PromptKeys;
import lmcache4j.server.controller.index.ChunkIndex;
import lmcache4j.server.controller.index.Holder;

/**
 * The lookup benchmark's index: {@code filler} random chunk keys spread over four instances (as if
 * many other prompts were cached), plus a few real prompts of {@code promptTokens} tokens: instance
 * 0 holds every chunk of each, instance 1 the first half, instance 2 the first chunk only. A
 * lookup of one of these prompts hashes it and walks all its chunks.
 */
final class LookupFixture {
    static final int INSTANCES = 4;

    final ChunkIndex index;
    final int[][] prompts;

    /** Fills {@code index} (a controller's own, for the HTTP measurement). */
    LookupFixture(ChunkIndex index, PromptKeys keys, long filler, int prompts, int promptTokens, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        this.index = index;
        this.prompts = new int[prompts][];
        try (ChunkIndex.Batch b = index.batch()) {
            int[] ids = new int[INSTANCES];
            for (int i = 0; i < INSTANCES; i++) {
                ids[i] = b.holder(new Holder("instance-" + i, 0, i == 3 ? "LocalDiskBackend" : "LocalCPUBackend"));
            }
            for (long i = 0; i < filler; i++) {
                b.admit(ids[(int) (i % INSTANCES)], random.nextLong());
            }
            for (int p = 0; p < prompts; p++) {
                int[] tokens = random.ints(promptTokens, 0, 128_256).toArray();
                this.prompts[p] = tokens;
                long[] chunkKeys = keys.of(tokens).keys();
                for (int c = 0; c < chunkKeys.length; c++) {
                    b.admit(ids[0], chunkKeys[c]);
                    if (c < chunkKeys.length / 2) {
                        b.admit(ids[1], chunkKeys[c]);
                    }
                    if (c == 0) {
                        b.admit(ids[2], chunkKeys[c]);
                    }
                }
            }
        }
    }
}
