package lmcache4j.engine;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import lmcache4j.allocator.DType;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;

/**
 * A paged KV cache in host memory whose values are a function of (layer, plane, token position,
 * element, token id): what a model would have computed, so that any byte retrieved into the wrong
 * place is detectable.
 */
final class SyntheticKv {
    static final int LAYERS = 2;
    static final int HEADS = 2;
    static final int HEAD = 8;
    static final int BLOCK = 16;

    static ModelMetadata model() {
        return new ModelMetadata("synthetic/model", 1, 0, DType.FLOAT16, LAYERS, HEADS, HEAD, false);
    }

    static PagedKvCache cache(Arena arena, int blocks) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, blocks, BLOCK, HEADS, HEAD, DType.FLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, blocks, BLOCK, HEADS, HEAD, DType.FLOAT16);
    }

    /** Slots for {@code tokens} tokens over a random block table. */
    static long[] slots(int tokens, int blocks, long seed) {
        List<Integer> table = new ArrayList<>();
        for (int b = 0; b < blocks; b++) {
            table.add(b);
        }
        Collections.shuffle(table, new Random(seed));
        long[] slots = new long[tokens];
        for (int t = 0; t < tokens; t++) {
            slots[t] = (long) table.get(t / BLOCK) * BLOCK + t % BLOCK;
        }
        return slots;
    }

    static short value(int layer, int plane, int position, int element, int token) {
        return (short) (token * 31 + position * 7 + layer * 1009 + plane * 503 + element);
    }

    /** "Computes" the KV of tokens [from, to) into their slots. */
    static void compute(PagedKvCache kv, int[] tokens, long[] slots, int from, int to) {
        for (int l = 0; l < LAYERS; l++) {
            for (int p = 0; p < 2; p++) {
                for (int t = from; t < to; t++) {
                    long base = kv.offset(p, slots[t]);
                    for (int e = 0; e < kv.hidden(); e++) {
                        kv.layers().get(l).set(ValueLayout.JAVA_SHORT, base + 2L * e, value(l, p, t, e, tokens[t]));
                    }
                }
            }
        }
    }

    /** The number of elements in tokens [from, to) that differ from what compute would give. */
    static long mismatches(PagedKvCache kv, int[] tokens, long[] slots, int from, int to) {
        long bad = 0;
        for (int l = 0; l < LAYERS; l++) {
            for (int p = 0; p < 2; p++) {
                for (int t = from; t < to; t++) {
                    long base = kv.offset(p, slots[t]);
                    for (int e = 0; e < kv.hidden(); e++) {
                        if (kv.layers().get(l).get(ValueLayout.JAVA_SHORT, base + 2L * e) != value(l, p, t, e, tokens[t])) {
                            bad++;
                        }
                    }
                }
            }
        }
        return bad;
    }

    static int[] tokens(int n, long seed) {
        Random random = new Random(seed);
        int[] tokens = new int[n];
        for (int i = 0; i < n; i++) {
            tokens[i] = random.nextInt(128_000);
        }
        return tokens;
    }

    private SyntheticKv() {
    }
}
