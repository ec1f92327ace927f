package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.KvBufferCache;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The edges of a KV buffer's copies: the first and the last position are inside, one past either
 * end and an empty range are refused for what they are (with a chunk of the right size, so the
 * range check itself is what refuses), and a chunk of the wrong size is refused naming both sizes.
 */
class JlamaKvCacheBoundsTest {
    @TempDir
    Path dir;

    @Test
    void theFirstAndLastPositionsAreInsideAndOnePastEitherEndIsNot() throws IOException {
        AbstractModel model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir).toFile(), DType.F32, DType.F32);
        try (KvBufferCache buffers = new KvBufferCache(model);
             KvBufferCache.KvBuffer buffer = buffers.getEphemeralKvBuffer();
             Arena arena = Arena.ofConfined()) {
            JlamaKvCache kv = new JlamaKvCache(model, buffer);
            int capacity = kv.capacity();
            assertEquals(model.getConfig().contextLength, capacity);
            long perToken = 2L * kv.layerCount() * kv.hidden() * Float.BYTES;

            MemorySegment first = arena.allocate(3 * perToken, 64);
            first.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, 1.5f); // layer 0's key at position 0
            kv.scatter(first, 0, 3);
            assertEquals(1.5f, buffer.getKeyTensorForPosition(0, 0).get(0, 0), "position 0 is written");

            MemorySegment last = arena.allocate(2 * perToken, 64);
            // [K, V][layer][token][hidden]: V starts after both tokens of every layer's keys
            last.set(ValueLayout.JAVA_FLOAT_UNALIGNED, perToken + (long) kv.hidden() * Float.BYTES, 2.5f); // V, layer 0, last
            kv.scatter(last, capacity - 2, capacity);
            assertEquals(2.5f, buffer.getValTensorForPosition(0, capacity - 1).get(0, 0), "the last position is written");
            MemorySegment back = arena.allocate(2 * perToken, 64);
            kv.gather(capacity - 2, capacity, back);
            assertEquals(-1, last.mismatch(back), "the last positions read back");

            assertRefused(() -> kv.gather(-1, 2, arena.allocate(3 * perToken, 64)), "[-1, 2)");
            assertRefused(() -> kv.gather(capacity - 1, capacity + 1, arena.allocate(2 * perToken, 64)),
                    "[" + (capacity - 1) + ", " + (capacity + 1) + ")");
            assertRefused(() -> kv.scatter(MemorySegment.NULL, 5, 5), "[5, 5)");
            assertRefused(() -> kv.gather(7, 5, MemorySegment.NULL), "[7, 5)");
            IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                    () -> kv.gather(0, 3, arena.allocate(3 * perToken - 4, 64)));
            assertTrue(size.getMessage().contains("3 tokens is " + 3 * perToken + " bytes here, got " + (3 * perToken - 4)),
                    size.getMessage());
        } finally {
            model.close();
        }
    }

    private static void assertRefused(org.junit.jupiter.api.function.Executable copy, String range) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, copy);
        assertTrue(e.getMessage().contains("positions " + range + " are not inside"), e.getMessage());
    }
}
