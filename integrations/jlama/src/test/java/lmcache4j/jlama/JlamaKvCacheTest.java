package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Random;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Gather and scatter against Jlama's own per-position accessors, for ranges that start, end and
 * cross Jlama's pages anywhere.
 */
class JlamaKvCacheTest {
    @TempDir
    Path dir;

    @Test
    void gatherAndScatterMatchJlamasPerPositionTensorsAcrossPages() throws IOException {
        AbstractModel model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir).toFile(), DType.F32, DType.F32);
        try (KvBufferCache buffers = new KvBufferCache(model);
             KvBufferCache.KvBuffer source = buffers.getEphemeralKvBuffer();
             KvBufferCache.KvBuffer target = buffers.getEphemeralKvBuffer();
             Arena arena = Arena.ofConfined()) {
            JlamaKvCache from = new JlamaKvCache(model, source);
            JlamaKvCache to = new JlamaKvCache(model, target);
            int hidden = from.hidden();
            Random random = new Random(3);
            for (int layer = 0; layer < from.layerCount(); layer++) {
                for (int pos = 0; pos < 3_000; pos++) {
                    fill(source.getKeyTensorForPosition(layer, pos), random);
                    fill(source.getValTensorForPosition(layer, pos), random);
                }
            }
            for (int trial = 0; trial < 40; trial++) {
                int start = random.nextInt(2_500);
                int end = start + 1 + random.nextInt(500);
                MemorySegment chunk = arena.allocate(2L * from.layerCount() * (end - start) * hidden * Float.BYTES, 64);
                from.gather(start, end, chunk);
                to.scatter(chunk, start, end);
                for (int plane = 0; plane < 2; plane++) {
                    for (int layer = 0; layer < from.layerCount(); layer++) {
                        for (int pos = start; pos < end; pos += 1 + random.nextInt(7)) {
                            AbstractTensor expected = plane == 0 ? source.getKeyTensorForPosition(layer, pos)
                                    : source.getValTensorForPosition(layer, pos);
                            AbstractTensor copied = plane == 0 ? target.getKeyTensorForPosition(layer, pos)
                                    : target.getValTensorForPosition(layer, pos);
                            for (int e = 0; e < hidden; e++) {
                                long offset = ((((long) plane * from.layerCount() + layer) * (end - start) + pos - start)
                                        * hidden + e) * Float.BYTES;
                                assertEquals(expected.get(0, e), chunk.get(ValueLayout.JAVA_FLOAT_UNALIGNED, offset));
                                assertEquals(expected.get(0, e), copied.get(0, e));
                            }
                        }
                    }
                }
            }
            MemorySegment small = arena.allocate(64);
            assertThrows(IllegalArgumentException.class, () -> from.gather(0, 10, small));
            assertThrows(IllegalArgumentException.class, () -> from.gather(5, 5, small));
            assertThrows(IllegalArgumentException.class, () -> from.scatter(small, -1, 3));
            assertThrows(IllegalArgumentException.class, () -> from.gather(0, from.capacity() + 1, small));
        } finally {
            model.close();
        }
    }

    private static void fill(AbstractTensor row, Random random) {
        for (int e = 0; e < row.shape().last(); e++) {
            row.set(random.nextFloat(), 0, e);
        }
    }
}
