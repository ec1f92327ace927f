package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Random;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SegmentKvCache} on a Jlama model whose KV is BF16: the keys it stores are the moved float
 * keys rounded to the nearest BF16 (never truncated, never another element's bytes), values are
 * stored as Jlama holds them, and a segment scattered at another position has the keys Jlama
 * computes there within the two roundings.
 */
class SegmentKvCacheBf16Test {
    /** A BF16 unit in the last place is 2^16 float ulps (7 stored mantissa bits instead of 23). */
    private static final float BF16_ULPS = 65_536f;

    @TempDir
    static Path dir;
    private static AbstractModel model;
    private static KvBufferCache buffers;

    @BeforeAll
    static void loadModel() throws IOException {
        model = ModelSupport.loadModel(new SyntheticLlama(128, 2, 2, 2, 256, 4_352, 7).writeTo(dir.resolve("model")).toFile(),
                DType.BF16, DType.BF16);
        buffers = new KvBufferCache(model);
    }

    @AfterAll
    static void closeModel() {
        buffers.close();
        model.close();
    }

    private static float bf16At(MemorySegment chunk, long element) {
        short bits = chunk.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * element);
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    @Test
    void theModelKeepsItsKvInBf16() {
        assertEquals(lmcache4j.allocator.DType.BFLOAT16, JlamaKvCache.dtypeOf(model));
    }

    @Test
    void storedKeysAreTheMovedKeysRoundedToTheNearestBf16AndValuesAreJlamasBytes() {
        int[] prompt = new Random(1).ints(300, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        int start = 100;
        int tokens = 200;
        KeyRotation rotation = KeyRotation.of(model.getConfig());
        int hidden = model.getConfig().kvLength;
        int layers = model.getConfig().numberOfLayers;
        try (KvBufferCache.KvBuffer source = buffers.getEphemeralKvBuffer(); Arena arena = Arena.ofConfined()) {
            model.batchForward(prompt, 0, source, Optional.empty()).close();
            MemorySegment chunk = arena.allocate(2L * layers * tokens * hidden * 2);
            new SegmentKvCache(new JlamaKvCache(model, source), rotation).gather(start, start + tokens, chunk);
            float[] row = new float[hidden];
            int roundedUp = 0;
            int inexact = 0;
            for (int layer = 0; layer < layers; layer++) {
                for (int t = 0; t < tokens; t++) {
                    AbstractTensor key = source.getKeyTensorForPosition(layer, start + t);
                    AbstractTensor value = source.getValTensorForPosition(layer, start + t);
                    for (int e = 0; e < hidden; e++) {
                        row[e] = key.get(0, e);
                    }
                    rotation.move(row, 0, start + t, t);
                    long keyAt = ((long) layer * tokens + t) * hidden;
                    long valueAt = ((long) (layers + layer) * tokens + t) * hidden;
                    for (int e = 0; e < hidden; e++) {
                        float stored = bf16At(chunk, keyAt + e);
                        float error = Math.abs(stored - row[e]);
                        assertTrue(error <= 0.5f * Math.ulp(row[e]) * BF16_ULPS, "layer " + layer + " token " + t + " element "
                                + e + ": stored " + stored + " for " + row[e] + ", more than half a BF16 unit away");
                        roundedUp += Math.abs(stored) > Math.abs(row[e]) ? 1 : 0;
                        inexact += stored != row[e] ? 1 : 0;
                        assertEquals(value.get(0, e), bf16At(chunk, valueAt + e), "values are copied as Jlama holds them");
                    }
                }
            }
            // Of the keys BF16 cannot hold, nearest rounding takes about half away from zero; truncation none.
            assertTrue(inexact > 0 && roundedUp > inexact / 4, roundedUp + " of " + inexact + " inexact keys rounded away from zero");
        }
    }

    @Test
    void aBf16SegmentStoredFromOnePositionLoadsAsComputedAtAnother() {
        int[] segment = new Random(5).ints(200, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        int[] first = concat(new Random(6).ints(100, 3, SyntheticLlama.VOCAB_SIZE).toArray(), segment);
        int[] second = concat(new Random(7).ints(700, 3, SyntheticLlama.VOCAB_SIZE).toArray(), segment);
        KeyRotation rotation = KeyRotation.of(model.getConfig());
        int hidden = model.getConfig().kvLength;
        int layers = model.getConfig().numberOfLayers;
        try (KvBufferCache.KvBuffer source = buffers.getEphemeralKvBuffer();
             KvBufferCache.KvBuffer expected = buffers.getEphemeralKvBuffer();
             KvBufferCache.KvBuffer target = buffers.getEphemeralKvBuffer();
             Arena arena = Arena.ofConfined()) {
            model.batchForward(first, 0, source, Optional.empty()).close();
            model.batchForward(second, 0, expected, Optional.empty()).close();
            MemorySegment chunk = arena.allocate(2L * layers * segment.length * hidden * 2);
            new SegmentKvCache(new JlamaKvCache(model, source), rotation).gather(100, 300, chunk);
            MemorySegment stored = arena.allocate(chunk.byteSize());
            stored.copyFrom(chunk);
            new SegmentKvCache(new JlamaKvCache(model, target), rotation).scatter(chunk, 700, 900);
            assertEquals(-1, chunk.mismatch(stored), "scatter changed the stored chunk");
            float worstKey = 0;
            float largest = 0;
            for (int p = 700; p < 900; p++) {
                AbstractTensor k = target.getKeyTensorForPosition(0, p);
                AbstractTensor ek = expected.getKeyTensorForPosition(0, p);
                for (int e = 0; e < hidden; e++) {
                    worstKey = Math.max(worstKey, Math.abs(k.get(0, e) - ek.get(0, e)));
                    largest = Math.max(largest, Math.abs(ek.get(0, e)));
                }
            }
            // Jlama's own key at 700… is one BF16 rounding of the float key; the moved one is two
            // roundings (stored, then loaded) of keys that were themselves rounded once at 100…:
            // a few BF16 units of the largest key, never a wrong row.
            float bound = 4 * Math.ulp(largest) * BF16_ULPS;
            assertTrue(worstKey <= bound, "keys differ by " + worstKey + " (bound " + bound + ", largest " + largest + ")");
        }
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = new int[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
