package lmcache4j.bench.demo;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import lmcache4j.engine.connector.PagedKvCache;

/**
 * A deterministic stand-in for a transformer's KV projections. The K (plane 0) and V (plane 1)
 * vector of token position {@code t} in layer {@code l} is a pseudo-random function of
 * <em>the whole token prefix</em> {@code tokens[0..t]} (through a rolling hash), the layer, the
 * plane, the position and the element index, as real KV is: the same token after a different
 * history has different KV. So a chunk retrieved for the wrong prefix, a token put in the wrong
 * slot, a swapped layer or plane, or a single flipped byte all show up as mismatching bytes when
 * the retrieved KV is compared with a recomputation.
 *
 * <p>Values are generated eight bytes at a time (four bf16 elements per 64-bit word) with the
 * SplitMix64 finaliser, so "computing" and verifying run at memory-like speed. The bytes are
 * arbitrary bit patterns, not meaningful bf16 numbers; only their identity matters here.
 *
 * <p>The cache's vectors must be 8-byte multiples and 8-byte aligned (any head size × bf16 that is
 * a multiple of 4 elements, in buffers from an arena).
 */
public final class KvModel {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    private static final long PREFIX_START = 0x6C6D63616368656CL; // "lmcachel"
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG;

    private KvModel() {
    }

    /**
     * The rolling prefix hash of every position: {@code h[t]} depends on {@code tokens[0..t]} and
     * on nothing else (so two requests sharing a prefix share these values over it).
     */
    public static long[] prefixHashes(int[] tokens) {
        long[] h = new long[tokens.length];
        long state = PREFIX_START;
        for (int t = 0; t < tokens.length; t++) {
            state = mix(state * 31 + tokens[t] + GOLDEN);
            h[t] = state;
        }
        return h;
    }

    /** The seed of one (layer, plane, position) vector. */
    static long vectorSeed(long prefixHash, int layer, int plane, int position) {
        return mix(prefixHash ^ ((long) layer << 40) ^ ((long) plane << 56) ^ (position * GOLDEN));
    }

    /** The {@code i}-th 64-bit word of the vector with {@code seed}. */
    static long word(long seed, int i) {
        return mix(seed + (i + 1) * GOLDEN);
    }

    /** "Computes" the KV of positions {@code [from, to)} into their slots, every layer and plane. */
    public static void compute(PagedKvCache kv, long[] prefixHashes, long[] slots, int from, int to) {
        int words = words(kv);
        int planes = kv.layout().kvPlanes();
        for (int l = 0; l < kv.layerCount(); l++) {
            MemorySegment layer = kv.layers().get(l);
            for (int p = 0; p < planes; p++) {
                for (int t = from; t < to; t++) {
                    long base = kv.offset(p, slots[t]);
                    long seed = vectorSeed(prefixHashes[t], l, p, t);
                    for (int i = 0; i < words; i++) {
                        layer.set(WORD, base + 8L * i, word(seed, i));
                    }
                }
            }
        }
    }

    /**
     * The number of bytes of positions {@code [from, to)} (every layer and plane) that differ from
     * what {@link #compute} writes. 0 means every byte is right.
     */
    public static long mismatchingBytes(PagedKvCache kv, long[] prefixHashes, long[] slots, int from, int to) {
        int words = words(kv);
        int planes = kv.layout().kvPlanes();
        long bad = 0;
        for (int l = 0; l < kv.layerCount(); l++) {
            MemorySegment layer = kv.layers().get(l);
            for (int p = 0; p < planes; p++) {
                for (int t = from; t < to; t++) {
                    long base = kv.offset(p, slots[t]);
                    long seed = vectorSeed(prefixHashes[t], l, p, t);
                    long diff = 0;
                    for (int i = 0; i < words; i++) {
                        diff |= layer.get(WORD, base + 8L * i) ^ word(seed, i);
                    }
                    if (diff != 0) { // rare: count the bytes of this vector one word at a time
                        for (int i = 0; i < words; i++) {
                            bad += differingBytes(layer.get(WORD, base + 8L * i) ^ word(seed, i));
                        }
                    }
                }
            }
        }
        return bad;
    }

    /** Bytes of KV per token: every layer and plane. */
    public static long bytesPerToken(PagedKvCache kv) {
        return (long) kv.layerCount() * kv.layout().kvPlanes() * kv.vectorBytes();
    }

    private static int words(PagedKvCache kv) {
        long bytes = kv.vectorBytes();
        if (bytes % 8 != 0) {
            throw new IllegalArgumentException("KvModel needs vectors of a multiple of 8 bytes, got " + bytes);
        }
        return (int) (bytes / 8);
    }

    static int differingBytes(long xor) {
        int n = 0;
        for (int b = 0; b < 8; b++) {
            if (((xor >>> (8 * b)) & 0xFF) != 0) {
                n++;
            }
        }
        return n;
    }

    /** SplitMix64's finaliser: a bijection on 64 bits with full avalanche. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
