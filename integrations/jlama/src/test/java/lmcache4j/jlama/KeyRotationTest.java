package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
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
 * The key rotation against the real model: a segment's layer-0 keys computed at positions 0… and
 * moved to p… must equal the keys Jlama computes for the same tokens at p…. Layer 0 because its raw
 * key depends on the token alone (a Llama has no position in its input embedding), so the only
 * difference between the two is RoPE; deeper layers' keys also depend on what precedes the segment.
 */
class KeyRotationTest {
    /**
     * Float rounding allowed, in units of the largest key element's ulp. Jlama rounds each turned
     * element once (float products of a float table); the move rounds once from a key that was
     * rounded once, with angles taken from two float table entries: measured worst 4 ulps here (9.5e-7
     * at a largest element of 3.67), so 8 leaves room without letting a wrong angle through (a wrong
     * sign or pairing is ~10⁵ ulps off).
     */
    private static final int ULPS = 8;

    @TempDir
    static Path dir;
    private static AbstractModel model;
    private static KvBufferCache buffers;

    @BeforeAll
    static void loadModel() throws IOException {
        Path modelDir = SyntheticLlama.tiny().writeTo(dir.resolve("model"));
        model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        buffers = new KvBufferCache(model);
    }

    @AfterAll
    static void closeModel() {
        buffers.close();
        model.close();
    }

    @Test
    void aSegmentMovedFromZeroToPEqualsTheSegmentComputedAtP() {
        int[] segment = new Random(1).ints(300, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        int[] before = new Random(2).ints(1_000, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        int[] prompt = new int[before.length + segment.length];
        System.arraycopy(before, 0, prompt, 0, before.length);
        System.arraycopy(segment, 0, prompt, before.length, segment.length);
        KeyRotation rotation = KeyRotation.of(model.getConfig());
        int kvLength = model.getConfig().kvLength;
        try (KvBufferCache.KvBuffer alone = buffers.getEphemeralKvBuffer();
             KvBufferCache.KvBuffer inPlace = buffers.getEphemeralKvBuffer()) {
            model.batchForward(segment, 0, alone, Optional.empty()).close();
            model.batchForward(prompt, 0, inPlace, Optional.empty()).close();
            float worst = 0;
            float largest = 0;
            float unmoved = 0;
            for (int t = 0; t < segment.length; t++) {
                int p = before.length + t;
                float[] moved = row(alone, t, kvLength);
                float[] original = moved.clone();
                rotation.move(moved, 0, t, p);
                float[] expected = row(inPlace, p, kvLength);
                for (int i = 0; i < kvLength; i++) {
                    worst = Math.max(worst, Math.abs(moved[i] - expected[i]));
                    largest = Math.max(largest, Math.abs(expected[i]));
                    unmoved = Math.max(unmoved, Math.abs(original[i] - expected[i]));
                }
            }
            float bound = ULPS * Math.ulp(largest);
            assertTrue(worst <= bound, "moved keys differ from the keys computed at p by " + worst + " (bound " + bound
                    + ", largest element " + largest + ")");
            assertTrue(unmoved > 1000 * bound, "the positions must matter: unmoved keys differ by only " + unmoved);
        }
    }

    @Test
    void movingThereAndBackGivesTheKeyBack() {
        KeyRotation rotation = KeyRotation.of(model.getConfig());
        int kvLength = model.getConfig().kvLength;
        float[] key = new float[kvLength];
        Random random = new Random(3);
        for (int i = 0; i < kvLength; i++) {
            key[i] = (float) random.nextGaussian();
        }
        float[] moved = key.clone();
        rotation.move(moved, 0, 17, 3_000);
        rotation.move(moved, 0, 3_000, 17);
        for (int i = 0; i < kvLength; i++) {
            assertEquals(key[i], moved[i], 1e-5f, "element " + i);
        }
    }

    @Test
    void positionsOutsideTheRotaryTableAreRefusedWithTheRange() {
        KeyRotation rotation = KeyRotation.of(model.getConfig());
        float[] key = new float[model.getConfig().kvLength];
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> rotation.move(key, 0, 0, rotation.lastPosition() + 1));
        assertTrue(e.getMessage().contains("outside this model's rotary table"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> rotation.move(key, 0, -1, 0));
    }

    private static float[] row(KvBufferCache.KvBuffer buffer, int position, int kvLength) {
        AbstractTensor key = buffer.getKeyTensorForPosition(0, position);
        float[] row = new float[kvLength];
        for (int i = 0; i < kvLength; i++) {
            row[i] = key.get(0, i);
        }
        return row;
    }
}
