package lmcache4j.tests;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import lmcache4j.engine.connector.PagedKvCache;

/**
 * A stand-in for a model's KV: each 64-bit word of the K or V vector of position {@code t} is a
 * function of the whole token prefix {@code tokens[0..t]}, the layer, the plane and the word's
 * index. KV retrieved for the wrong prefix, into the wrong slot, layer or plane, or with any byte
 * changed, differs from a recomputation.
 */
final class PrefixKv {
    static final byte POISON = (byte) 0x5A;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG;

    private PrefixKv() {
    }

    /** {@code h[t]} depends on {@code tokens[0..t]} and nothing else. */
    static long[] prefixHashes(int[] tokens) {
        long[] h = new long[tokens.length];
        long state = 0x243F6A8885A308D3L;
        for (int t = 0; t < tokens.length; t++) {
            state = fmix(state ^ (tokens[t] * 0xC2B2AE3D27D4EB4FL + t));
            h[t] = state;
        }
        return h;
    }

    /** Writes the KV of positions {@code [from, to)} into their slots, every layer and plane. */
    static void write(PagedKvCache kv, long[] prefixHashes, long[] slots, int from, int to) {
        int words = words(kv);
        for (int l = 0; l < kv.layerCount(); l++) {
            MemorySegment layer = kv.layers().get(l);
            for (int p = 0; p < kv.layout().kvPlanes(); p++) {
                for (int t = from; t < to; t++) {
                    long base = kv.offset(p, slots[t]);
                    for (int i = 0; i < words; i++) {
                        layer.set(WORD, base + 8L * i, word(prefixHashes[t], l, p, i));
                    }
                }
            }
        }
    }

    /** Fills the vectors of positions {@code [from, to)} with {@link #POISON}, so stale KV cannot pass for retrieved KV. */
    static void poison(PagedKvCache kv, long[] slots, int from, int to) {
        for (MemorySegment layer : kv.layers()) {
            for (int p = 0; p < kv.layout().kvPlanes(); p++) {
                for (int t = from; t < to; t++) {
                    layer.asSlice(kv.offset(p, slots[t]), kv.vectorBytes()).fill(POISON);
                }
            }
        }
    }

    /** 64-bit words of positions {@code [from, to)} that differ from what {@link #write} writes. */
    static long mismatchingWords(PagedKvCache kv, long[] prefixHashes, long[] slots, int from, int to) {
        int words = words(kv);
        long bad = 0;
        for (int l = 0; l < kv.layerCount(); l++) {
            MemorySegment layer = kv.layers().get(l);
            for (int p = 0; p < kv.layout().kvPlanes(); p++) {
                for (int t = from; t < to; t++) {
                    long base = kv.offset(p, slots[t]);
                    for (int i = 0; i < words; i++) {
                        if (layer.get(WORD, base + 8L * i) != word(prefixHashes[t], l, p, i)) {
                            bad++;
                        }
                    }
                }
            }
        }
        return bad;
    }

    private static long word(long prefixHash, int layer, int plane, int index) {
        return fmix(prefixHash + fmix(((long) layer << 40) ^ ((long) plane << 32) ^ index ^ 0x9E3779B97F4A7C15L));
    }

    private static int words(PagedKvCache kv) {
        if (kv.vectorBytes() % 8 != 0) {
            throw new IllegalArgumentException("vectors must be a multiple of 8 bytes, got " + kv.vectorBytes());
        }
        return (int) (kv.vectorBytes() / 8);
    }

    /** MurmurHash3's 64-bit finaliser: every input bit flips about half the output bits. */
    private static long fmix(long k) {
        k ^= k >>> 33;
        k *= 0xFF51AFD7ED558CCDL;
        k ^= k >>> 33;
        k *= 0xC4CEB9FE1A85EC53L;
        k ^= k >>> 33;
        return k;
    }
}
