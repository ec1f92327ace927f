package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
 * A segment's KV gathered at one position and scattered at another: its layer-0 keys and values
 * must be what Jlama computes for the segment at the new position (layer 0 depends on the tokens
 * alone, apart from RoPE), and the stored chunk must be left as it was (other requests read it).
 */
class SegmentKvCacheTest {
    @TempDir
    static Path dir;
    private static AbstractModel model;
    private static KvBufferCache buffers;

    @BeforeAll
    static void loadModel() throws IOException {
        model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir.resolve("model")).toFile(), DType.F32, DType.F32);
        buffers = new KvBufferCache(model);
    }

    @AfterAll
    static void closeModel() {
        buffers.close();
        model.close();
    }

    @Test
    void aSegmentStoredFromOnePositionLoadsAsComputedAtAnother() {
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
            MemorySegment chunk = arena.allocate(2L * layers * segment.length * kvLength * Float.BYTES);
            new SegmentKvCache(new JlamaKvCache(model, source), rotation).gather(100, 300, chunk);
            MemorySegment stored = arena.allocate(chunk.byteSize());
            stored.copyFrom(chunk);
            new SegmentKvCache(new JlamaKvCache(model, target), rotation).scatter(chunk, 700, 900);
            assertEquals(-1, chunk.mismatch(stored), "scatter changed the stored chunk");
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
            // Two moves (100… to 0…, 0… to 700…), each within KeyRotationTest's 8 ulps.
            assertTrue(worstKey <= 16 * Math.ulp(largest), "keys differ by " + worstKey + " (largest " + largest + ")");
            // Values carry no position, but Jlama's batched projection rounds a row differently at
            // another place in its batch (measured 7.2e-7 here): a few ulps, never a wrong row.
            assertTrue(worstValue <= 8 * Math.ulp(largestValue), "values differ by " + worstValue + " (largest " + largestValue + ")");
        }
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = new int[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
