package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Random;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.model.gpt2.GPT2Config;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * KeyRotation at its edges: the last position it allows is the last whose every KV head's entries
 * lie in Jlama's rotary table (derived here from the table's length, not from the class), a key
 * moved to where it already is keeps its bits, and every turn reads the pair of elements Jlama
 * rotates together.
 */
class KeyRotationEdgesTest {
    @TempDir
    Path dir;

    @Test
    void theLastPositionIsTheLastWhoseEntriesAreInTheTableAndAKeyMovedToItselfKeepsItsBits() throws IOException {
        AbstractModel model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir).toFile(), DType.F32, DType.F32);
        try {
            Config c = model.getConfig();
            int half = c.headSize / 2;
            int tableLength = c.ropeFreqs.orElseThrow().length;
            KeyRotation rotation = KeyRotation.of(c);
            int last = rotation.lastPosition();
            // Position p reads entries p·half + h·headSize + j, up to p·half + (kvHeads-1)·headSize + half - 1.
            int highestEntry = last * half + (c.numberOfKeyValueHeads - 1) * c.headSize + half - 1;
            assertTrue(highestEntry < tableLength && highestEntry + half >= tableLength,
                    "position " + last + " is the last inside a table of " + tableLength + " entries");

            float[] key = new float[c.kvLength];
            Random random = new Random(4);
            for (int i = 0; i < key.length; i++) {
                key[i] = (float) random.nextGaussian();
            }
            float[] atLast = key.clone();
            rotation.move(atLast, 0, 0, last);
            rotation.move(atLast, 0, last, 0);
            for (int i = 0; i < key.length; i++) {
                assertEquals(key[i], atLast[i], 1e-4f, "to the last position and back, element " + i);
            }
            for (int p = 0; p < 64; p++) {
                float[] same = key.clone();
                rotation.move(same, 0, p, p);
                assertArrayEquals(key, same, "a key moved from " + p + " to " + p + " is untouched, bit for bit");
            }

            float[] one = new float[c.kvLength + 3];
            one[3] = 1f; // KV head 0, element 0 at offset 3: it turns with element half, never another
            rotation.move(one, 3, 0, 1);
            for (int i = 0; i < one.length; i++) {
                if (i != 3 && i != 3 + half) {
                    assertEquals(0f, one[i], "element " + i + " is not element 0's pair");
                }
            }
            assertEquals(1.0, Math.hypot(one[3], one[3 + half]), 1e-6, "a turn keeps the pair's length");
            assertTrue(one[3 + half] != 0f, "position 1 turns element 0 into its pair");
            assertThrows(IllegalArgumentException.class, () -> rotation.move(key.clone(), 0, last + 1, 0));
        } finally {
            model.close();
        }
    }

    @Test
    void aModelWithoutARotaryTableIsRefusedNamingWhy() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KeyRotation.of(new GPT2Config(600, 64, 4, 2, 1e-5f, 1015, 1, 2)));
        assertTrue(e.getMessage().contains("this model has no rotary table"), e.getMessage());
    }
}
