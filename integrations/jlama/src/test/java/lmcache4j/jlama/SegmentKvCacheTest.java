package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A segment's KV gathered at one position and scattered at another: its layer-0 keys and values
 * must be what Jlama computes for the segment at the new position (layer 0 depends on the tokens
 * alone, apart from RoPE), the stored chunk must be left as it was (other requests read it), and
 * the key of the position after the segment must not be turned with it.
 */
class SegmentKvCacheTest {
    @TempDir
    static Path dir;
    private static Path modelDir;

    @BeforeAll
    static void writeModel() throws IOException {
        // Head size 64: Jlama's BF16 attention needs whole vectors of a head (the tiny model's 16 fail its check).
        modelDir = new SyntheticLlama(128, 2, 2, 1, 256, 4_352, 7).writeTo(dir.resolve("model"));
    }

    @ParameterizedTest(name = "{0} KV")
    @EnumSource(value = DType.class, names = {"F32", "BF16"})
    void aSegmentStoredFromOnePositionLoadsAsComputedAtAnother(DType working) {
        AbstractModel model = ModelSupport.loadModel(modelDir.toFile(), working, DType.F32);
        try (KvBufferCache buffers = new KvBufferCache(model)) {
            check(model, buffers, working);
        } finally {
            model.close();
        }
    }

    private static void check(AbstractModel model, KvBufferCache buffers, DType working) {
        int[] segment = new Random(5).ints(200, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        int[] first = concat(new Random(6).ints(100, 3, SyntheticLlama.VOCAB_SIZE).toArray(), segment);
        int[] second = concat(new Random(7).ints(700, 3, SyntheticLlama.VOCAB_SIZE).toArray(), segment);
        KeyRotation rotation = KeyRotation.of(model.getConfig());
        int kvLength = model.getConfig().kvLength;
        int layers = model.getConfig().numberOfLayers;
        try (KvBufferCache.KvBuffer source = buffers.getEphemeralKvBuffer();
             KvBufferCache.KvBuffer expected = buffers.getEphemeralKvBuffer();
             KvBufferCache.KvBuffer target = buffers.getEphemeralKvBuffer();
             Arena arena = Arena.ofConfined()) {
            model.batchForward(first, 0, source, Optional.empty()).close();
            model.batchForward(second, 0, expected, Optional.empty()).close();
            JlamaKvCache sourceKv = new JlamaKvCache(model, source);
            assertEquals(working == DType.BF16 ? lmcache4j.allocator.DType.BFLOAT16 : lmcache4j.allocator.DType.FLOAT32,
                    sourceKv.dtype());
            MemorySegment chunk = arena.allocate(2L * layers * segment.length * kvLength * sourceKv.dtype().byteSize());
            new SegmentKvCache(sourceKv, rotation).gather(100, 300, chunk);
            assertGatheredKeysAreTurnedAndRounded(source, chunk, rotation, layers, segment.length, kvLength, sourceKv.dtype());
            MemorySegment stored = arena.allocate(chunk.byteSize());
            stored.copyFrom(chunk);
            // The target holds a prompt that goes on past the segment: the position after it keeps its key.
            model.batchForward(concat(second, new Random(8).ints(10, 3, SyntheticLlama.VOCAB_SIZE).toArray()), 0, target,
                    Optional.empty()).close();
            float[][] after = keyRows(target, layers, 900, kvLength);
            new SegmentKvCache(new JlamaKvCache(model, target), rotation).scatter(chunk, 700, 900);
            assertEquals(-1, chunk.mismatch(stored), "scatter changed the stored chunk");
            float[][] afterNow = keyRows(target, layers, 900, kvLength);
            for (int layer = 0; layer < layers; layer++) {
                assertArrayEquals(after[layer], afterNow[layer], 0f, "layer " + layer + "'s key at 900, one past the segment, is untouched");
            }
            float worstKey = 0;
            float worstValue = 0;
            float largest = 0;
            float largestValue = 0;
            for (int p = 700; p < 900; p++) {
                AbstractTensor k = target.getKeyTensorForPosition(0, p);
                AbstractTensor v = target.getValTensorForPosition(0, p);
                AbstractTensor ek = expected.getKeyTensorForPosition(0, p);
                AbstractTensor ev = expected.getValTensorForPosition(0, p);
                for (int e = 0; e < kvLength; e++) {
                    worstKey = Math.max(worstKey, Math.abs(k.get(0, e) - ek.get(0, e)));
                    worstValue = Math.max(worstValue, Math.abs(v.get(0, e) - ev.get(0, e)));
                    largest = Math.max(largest, Math.abs(ek.get(0, e)));
                    largestValue = Math.max(largestValue, Math.abs(ev.get(0, e)));
                }
            }
            assertTrue(largest > 0 && largestValue > 0, "the forward pass wrote KV");
            if (working == DType.F32) {
                // Two moves (100… to 0…, 0… to 700…), each within KeyRotationTest's 8 ulps.
                assertTrue(worstKey <= 16 * Math.ulp(largest), "keys differ by " + worstKey + " (largest " + largest + ")");
                // Values carry no position, but Jlama's batched projection rounds a row differently at
                // another place in its batch (measured 7.2e-7 here): a few ulps, never a wrong row.
                assertTrue(worstValue <= 8 * Math.ulp(largestValue), "values differ by " + worstValue + " (largest " + largestValue + ")");
            } else {
                // BF16 keeps 8 bits of mantissa: each move rounds the turned key to BF16 once, and
                // Jlama's own key at 700… was rounded from another float; a few BF16 ulps of the largest.
                assertTrue(worstKey <= 4 * bf16Ulp(largest), "keys differ by " + worstKey + " (largest " + largest + ")");
                assertTrue(worstValue <= 2 * bf16Ulp(largestValue), "values differ by " + worstValue + " (largest " + largestValue + ")");
                assertANanKeyIsStoredAsANan(source, sourceKv, rotation, kvLength, arena);
            }
        }
    }

    /**
     * Each gathered key row is Jlama's row at {@code 100 + t} turned to {@code t} by the same rotation
     * and stored in the KV dtype; for BF16 rounded to nearest, ties to even, bit for bit.
     */
    private static void assertGatheredKeysAreTurnedAndRounded(KvBufferCache.KvBuffer source, MemorySegment chunk,
                                                              KeyRotation rotation, int layers, int tokens, int kvLength,
                                                              lmcache4j.allocator.DType dtype) {
        float[] row = new float[kvLength];
        int roundedDifferently = 0;
        for (int layer = 0; layer < layers; layer++) {
            for (int t = 0; t < tokens; t++) {
                AbstractTensor key = source.getKeyTensorForPosition(layer, 100 + t);
                for (int e = 0; e < kvLength; e++) {
                    row[e] = key.get(0, e);
                }
                rotation.move(row, 0, 100 + t, t);
                long base = ((long) layer * tokens + t) * kvLength * dtype.byteSize();
                for (int e = 0; e < kvLength; e++) {
                    if (dtype == lmcache4j.allocator.DType.FLOAT32) {
                        assertEquals(row[e], chunk.get(ValueLayout.JAVA_FLOAT_UNALIGNED, base + 4L * e), "layer " + layer + " token " + t);
                    } else {
                        short got = chunk.get(ValueLayout.JAVA_SHORT_UNALIGNED, base + 2L * e);
                        assertEquals(nearestBf16(row[e]), got, "layer " + layer + " token " + t + " element " + e + " of " + row[e]);
                        roundedDifferently += (Float.floatToRawIntBits(row[e]) >>> 16) != (got & 0xFFFF) ? 1 : 0;
                    }
                }
            }
        }
        if (dtype != lmcache4j.allocator.DType.FLOAT32) {
            assertTrue(roundedDifferently > 0, "no turned key needed rounding up: the check cannot tell rounding from truncation");
        }
    }

    /**
     * A NaN key (an activation that overflowed) is stored as a BF16 NaN: rounding its bits as a
     * number's could carry it into an infinity, or a dropped branch make it a number.
     */
    private static void assertANanKeyIsStoredAsANan(KvBufferCache.KvBuffer source, JlamaKvCache sourceKv, KeyRotation rotation,
                                                    int kvLength, Arena arena) {
        source.getKeyTensorForPosition(0, 150).set(Float.NaN, 0, 0);
        MemorySegment chunk = arena.allocate(2L * sourceKv.layerCount() * 200 * kvLength * Short.BYTES);
        new SegmentKvCache(sourceKv, rotation).gather(100, 300, chunk);
        long row = 50L * kvLength * Short.BYTES; // keys, layer 0, token 50 of the segment (position 150)
        // The turn mixes element 0 with element headSize/2: both come out NaN.
        for (int e : new int[] {0, sourceKv.headSize() / 2}) {
            int bits = chunk.get(ValueLayout.JAVA_SHORT_UNALIGNED, row + (long) e * Short.BYTES) & 0xFFFF;
            assertTrue((bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0, "element " + e + " of the NaN key is a BF16 NaN, not 0x"
                    + Integer.toHexString(bits));
        }
    }

    private static float[][] keyRows(KvBufferCache.KvBuffer buffer, int layers, int position, int kvLength) {
        float[][] rows = new float[layers][kvLength];
        for (int layer = 0; layer < layers; layer++) {
            AbstractTensor key = buffer.getKeyTensorForPosition(layer, position);
            for (int e = 0; e < kvLength; e++) {
                rows[layer][e] = key.get(0, e);
            }
        }
        return rows;
    }

    /** Round to nearest, ties to even, by the definition: the nearer of the two BF16 neighbours. */
    private static short nearestBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        int down = bits & 0xFFFF0000;
        int up = down + 0x10000;
        double toDown = Math.abs((double) f - Float.intBitsToFloat(down));
        double toUp = Math.abs((double) Float.intBitsToFloat(up) - f);
        int pick = toDown < toUp ? down : toUp < toDown ? up : ((down >>> 16) & 1) == 0 ? down : up;
        return (short) (pick >>> 16);
    }

    /** The gap between BF16 values near {@code x}: 16 fewer mantissa bits than a float's. */
    private static float bf16Ulp(float x) {
        return Math.ulp(x) * 65_536f;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = new int[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
