package lmcache4j.engine.connector.internal;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.engine.connector.PagedKvCache;

/**
 * Builds {@link CopyPlan}s for the object layouts of LMCache's connectors (spec §7.2–7.3):
 * <ul>
 *   <li>{@code KV_2LTD} {@code [2, layers, tokens, hidden]} and {@code KV_MLA_FMT}
 *       {@code [1, layers, tokens, latent]}: every layer of a chunk;</li>
 *   <li>{@code KV_T2D} {@code [tokens, 2, hidden]} and {@code KV_2TD} {@code [2, tokens, hidden]}:
 *       one layer (layerwise mode).</li>
 * </ul>
 * Token {@code t} of the request lives in slot {@code slots[t]}; a slot of -1 means the engine
 * wants that token left alone.
 */
public final class CopyPlanner {
    private CopyPlanner() {
    }

    /** What to do with a token whose slot is -1. */
    public enum Unmapped {
        /** Refuse the plan: storing needs every token's KV. */
        REJECT,
        /** Leave the token out: on retrieve the engine already has it. */
        SKIP
    }

    /**
     * Plans all layers of tokens {@code [start, end)} for a {@code KV_2LTD} or {@code KV_MLA_FMT} object.
     * The slots are read once, into runs of consecutive tokens whose vectors are contiguous in every
     * plane (a block's worth with vLLM's block tables); each run then becomes one copy per plane and
     * layer. The plan is the one a token-by-token walk would build, in the same order, with a
     * fraction of the work: 2 × layers × tokens / block size additions instead of 2 × layers × tokens.
     */
    public static void planChunk(PagedKvCache kv, long[] slots, int start, int end, Unmapped unmapped, CopyPlan out) {
        out.clear();
        int planes = kv.layout().kvPlanes();
        int layers = kv.layerCount();
        int tokens = end - start;
        long vec = kv.vectorBytes();
        int runs = tokenRuns(kv, slots, start, end, unmapped, out);
        int[] runStart = out.tokenRunStart;
        int[] runLength = out.tokenRunLength;
        for (int p = 0; p < planes; p++) {
            for (int l = 0; l < layers; l++) {
                long objBase = ((long) p * layers + l) * tokens * vec;
                for (int r = 0; r < runs; r++) {
                    int t = runStart[r];
                    out.add(l, kv.offset(p, slots[t]), objBase + (t - start) * vec, runLength[r] * vec);
                }
            }
        }
    }

    /**
     * Splits the mapped tokens of {@code [start, end)} into maximal runs of consecutive tokens whose
     * vectors follow each other in every plane; stores them in {@code out}'s token-run arrays and
     * returns how many there are. Checks every slot, in token order.
     */
    private static int tokenRuns(PagedKvCache kv, long[] slots, int start, int end, Unmapped unmapped, CopyPlan out) {
        int planes = kv.layout().kvPlanes();
        long vec = kv.vectorBytes();
        int runs = 0;
        long previous = -1;
        for (int t = start; t < end; t++) {
            long slot = slot(kv, slots, t, unmapped);
            if (slot < 0) {
                previous = -1;
                continue;
            }
            boolean continues = previous >= 0;
            for (int p = 0; continues && p < planes; p++) {
                continues = kv.offset(p, previous) + vec == kv.offset(p, slot);
            }
            if (continues) {
                out.tokenRunLength[runs - 1]++;
            } else {
                out.ensureTokenRuns(runs + 1);
                out.tokenRunStart[runs] = t;
                out.tokenRunLength[runs] = 1;
                runs++;
            }
            previous = slot;
        }
        return runs;
    }

    /** Plans layer {@code layer} of tokens {@code [start, end)} for a {@code KV_T2D} or {@code KV_2TD} object. */
    public static void planLayer(PagedKvCache kv, long[] slots, int layer, int start, int end, MemoryFormat format,
                          Unmapped unmapped, CopyPlan out) {
        out.clear();
        int tokens = end - start;
        long vec = kv.vectorBytes();
        int planes = kv.layout().kvPlanes();
        if (format == MemoryFormat.KV_2TD) {
            for (int p = 0; p < planes; p++) {
                for (int t = start; t < end; t++) {
                    long slot = slot(kv, slots, t, unmapped);
                    if (slot >= 0) {
                        out.add(layer, kv.offset(p, slot), ((long) p * tokens + (t - start)) * vec, vec);
                    }
                }
            }
        } else {
            for (int t = start; t < end; t++) {
                long slot = slot(kv, slots, t, unmapped);
                if (slot >= 0) {
                    for (int p = 0; p < planes; p++) {
                        out.add(layer, kv.offset(p, slot), ((long) (t - start) * planes + p) * vec, vec);
                    }
                }
            }
        }
    }

    private static long slot(PagedKvCache kv, long[] slots, int t, Unmapped unmapped) {
        long slot = slots[t];
        if (slot < 0) {
            if (slot == -1 && unmapped == Unmapped.SKIP) {
                return -1;
            }
            throw new IllegalArgumentException("token " + t + " has slot " + slot
                    + (slot == -1 ? ": the engine has no KV for it, so it cannot be stored" : ": slots are >= 0, or -1"));
        }
        if (slot >= kv.slots()) {
            throw new IllegalArgumentException("token " + t + " has slot " + slot + ", beyond the cache's "
                    + kv.slots() + " slots (" + kv.numBlocks() + " blocks of " + kv.blockSize() + ")");
        }
        return slot;
    }
}
