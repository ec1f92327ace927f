package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

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
 * The blended forward pass on a KV buffer prepared by hand (the 2-layer tiny model, check layer 0):
 * the cached positions recomputed after the check layer are those whose check-layer keys moved
 * most, in that order, and their later layers are computed from their own rows; with the last
 * layer as the check layer every position runs every layer, so the output is a plain prefill's
 * (to float rounding here, cold: the bit-for-bit check after the JIT's warm-up is BlendedPrefillTest's).
 */
class BlendedForwardTest {
    /** A value no layer computes: a cached key still holding it after the pass was not recomputed. */
    private static final float UNTOUCHED = 1.0e6f;

    @TempDir
    static Path dir;
    private static AbstractModel model;

    @BeforeAll
    static void loadModel() throws IOException {
        model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir.resolve("model")).toFile(), DType.F32, DType.F32);
    }

    @AfterAll
    static void closeModel() {
        model.close();
    }

    @Test
    void theCachedPositionsWhoseCheckLayerKeysMovedMostAreRecomputedFromTheirOwnRows() {
        int[] tokens = new Random(5).ints(40, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        boolean[] cached = new boolean[tokens.length];
        java.util.Arrays.fill(cached, 0, 30, true);
        ReentrantLock lock = new ReentrantLock();
        try (KvBufferCache buffers = new KvBufferCache(model);
             KvBufferCache.KvBuffer plain = buffers.getEphemeralKvBuffer();
             KvBufferCache.KvBuffer mixed = buffers.getEphemeralKvBuffer()) {
            model.batchForward(tokens, 0, plain).close();
            for (int p = 0; p < 30; p++) {
                copyRow(plain.getKeyTensorForPosition(0, p), mixed.getKeyTensorForPosition(0, p));
                copyRow(plain.getValTensorForPosition(0, p), mixed.getValTensorForPosition(0, p));
                copyRow(plain.getValTensorForPosition(1, p), mixed.getValTensorForPosition(1, p));
                AbstractTensor later = mixed.getKeyTensorForPosition(1, p);
                for (int e = 0; e < later.shape().last(); e++) {
                    later.set(UNTOUCHED, 0, e);
                }
            }
            // The cached check-layer keys of 17, 3 and 25 differ from what the layer computes, by 3, 2 and 1.
            nudge(mixed.getKeyTensorForPosition(0, 17), 3f);
            nudge(mixed.getKeyTensorForPosition(0, 3), 2f);
            nudge(mixed.getKeyTensorForPosition(0, 25), 1f);

            BlendedForward forward = new BlendedForward(model, new JlamaLayers(model), lock, CachedPrefill.JLAMA_BATCH);
            BlendedForward.Outcome outcome = forward.run(tokens, cached, mixed, 0.07, 0); // (int) (30 × 0.07) = 2
            outcome.lastHidden().close();
            assertEquals(12, outcome.recomputedTokens(), "the 10 uncached positions and the 2 cached ones that moved most");
            assertEquals(40L * 1 + 12L * 1, outcome.tokenLayers(), "every position through layer 0, the recomputed through 1");
            assertFalse(lock.isLocked(), "every forward call gives the lock back");
            Set<Integer> recomputed = Set.of(3, 17);
            for (int p = 0; p < tokens.length; p++) {
                AbstractTensor got = mixed.getKeyTensorForPosition(1, p);
                AbstractTensor want = plain.getKeyTensorForPosition(1, p);
                if (p < 30 && !recomputed.contains(p)) {
                    assertEquals(UNTOUCHED, got.get(0, 0), "position " + p + " kept its cached layer-1 key");
                    continue;
                }
                for (int e = 0; e < got.shape().last(); e++) {
                    assertEquals(want.get(0, e), got.get(0, e), 1e-4f * (1 + Math.abs(want.get(0, e))),
                            "position " + p + "'s layer-1 key is computed from its own layer-0 output, element " + e);
                }
            }
        }
    }

    @Test
    void withTheLastLayerAsCheckLayerAWholeBatchPromptIsThePlainPrefill() {
        int[] tokens = new Random(6).ints(CachedPrefill.JLAMA_BATCH, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        boolean[] cached = new boolean[tokens.length];
        java.util.Arrays.fill(cached, 0, 200, true);
        int vocabulary = model.getConfig().vocabularySize;
        try (KvBufferCache buffers = new KvBufferCache(model);
             KvBufferCache.KvBuffer plain = buffers.getEphemeralKvBuffer();
             KvBufferCache.KvBuffer blended = buffers.getEphemeralKvBuffer();
             AbstractTensor plainLogits = model.makeDenseTensor(1, vocabulary);
             AbstractTensor blendedLogits = model.makeDenseTensor(1, vocabulary)) {
            try (AbstractTensor hidden = model.batchForward(tokens, 0, plain);
                 AbstractTensor last = hidden.slice(tokens.length - 1)) {
                model.sample(last, 0f, 0f, plainLogits);
            }
            int last = model.getConfig().numberOfLayers - 1;
            BlendedForward forward = new BlendedForward(model, new JlamaLayers(model), new ReentrantLock(),
                    CachedPrefill.JLAMA_BATCH);
            BlendedForward.Outcome outcome = forward.run(tokens, cached, blended, 0.5, last);
            try (AbstractTensor hidden = outcome.lastHidden()) {
                model.sample(hidden, 0f, 0f, blendedLogits);
            }
            assertEquals(56 + 100, outcome.recomputedTokens(), "56 uncached and half of the 200 cached");
            assertEquals(2L * tokens.length, outcome.tokenLayers(), "every position through both layers, nothing after");
            // Bit for bit only once the JIT has compiled Jlama's kernels (BlendedPrefillTest warms up first).
            assertArrayEquals(row(plainLogits, vocabulary), row(blendedLogits, vocabulary), 1e-4f);
        }
    }

    private static float[] row(AbstractTensor t, int n) {
        float[] r = new float[n];
        for (int i = 0; i < n; i++) {
            r[i] = t.get(0, i);
        }
        return r;
    }

    private static void copyRow(AbstractTensor from, AbstractTensor to) {
        for (int e = 0; e < from.shape().last(); e++) {
            to.set(from.get(0, e), 0, e);
        }
    }

    private static void nudge(AbstractTensor key, float by) {
        key.set(key.get(0, 0) + by, 0, 0);
    }
}
