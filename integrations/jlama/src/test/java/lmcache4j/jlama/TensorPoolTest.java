package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.TensorCache;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;

/**
 * Every tensor a prefill takes from Jlama's tensor pool goes back to it, and every forward call
 * gives the forward lock back. Jlama's pool counts the bytes of the tensors it ever handed out
 * ({@code TensorCache.currentBytes}, up to 100 MB) and reuses the ones closed: a prefill that does
 * not close a tensor makes the next one take a new tensor, so the count grows with every request
 * until the pool is full and every tensor after is a fresh allocation. The same holds for a
 * prefill whose forward pass fails: its KV buffer's pages go back.
 */
class TensorPoolTest {
    /**
     * What three rounds may newly take when more scratch tensors are live at once: 128 head-sized
     * ones (64 bytes). CI met 1 and then 33 more than the round before; the smallest thing a round
     * could keep, one position's logits (1,015 floats, 4,060 bytes), adds 12,180 over three rounds.
     */
    private static final long SCHEDULING_SLACK = 128 * 64;
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
    void repeatedPrefillsOfEveryKindTakeNoMoreOfJlamasTensorPoolThanTheFirst() throws ReflectiveOperationException {
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.05).set("hash_seed", "0").set("enable_blending", true)
                .set("blend_recompute_ratios", List.of(0.5)).set("blend_check_layers", List.of(0))
                .set("blend_min_tokens", 16).build();
        int[] separator = BlendSettings.separatorTokens(" # # ", model);
        Random random = new Random(9);
        int[] document = random.ints(300, 3, 40).toArray(); // ids below the letters: never the separator's
        int[] question = random.ints(20, 3, 40).toArray();
        int[] cacheIt = join(document, separator, question);
        int[] reuseIt = join(random.ints(30, 3, 40).toArray(), separator, document, separator, question);
        int[] prefix = random.ints(300, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        ReentrantLock lock = new ReentrantLock();
        try (LMCacheEngine engine = BlendedPrefill.sharedEngine(config, CachedPrefill.metadata(model, "synthetic/pool"), List.of());
             CachedPrefill cached = new CachedPrefill(engine, model, lock);
             BlendedPrefill blended = new BlendedPrefill(engine, model, BlendSettings.from(config, model), lock)) {
            Runnable requests = () -> {
                try (CachedPrefill.Prefill p = cached.prefill(prefix)) {
                    p.decode(3);
                }
                try (CachedPrefill.Prefill p = cached.prefillWithoutCache(prefix)) {
                    p.decode(2);
                }
                try (BlendedPrefill.Result r = blended.prefill(cacheIt)) {
                    r.prefill().decode(2);
                }
                try (BlendedPrefill.Result r = blended.prefill(reuseIt)) {
                    assertTrue(r.prefill().cachedTokens() > 0, "the document's segment was reused");
                    assertTrue(r.recomputedTokens() < reuseIt.length, "a share of the cached positions was not recomputed");
                }
            };
            // Twice first: the second round finds cached what the first stored, and runs other shapes.
            requests.run();
            requests.run();
            assertPoolStopsGrowing(requests);
            assertFalse(lock.isLocked(), "every forward call gave the lock back");
        }
    }

    /**
     * A forward pass that fails after its first call (the lock it takes for the second throws, as
     * Jlama's {@code batchForward} or a layer would if it failed there) gives the prompt's KV buffer
     * back, for a prefix prefill, a plain one and a blended one: the pages its first call took from
     * the pool are reused by the next prefill, so failing prefills over and over take no more of the
     * pool than the first round.
     */
    @Test
    void aForwardPassThatFailsMidPromptGivesItsKvBufferBack() throws ReflectiveOperationException {
        int[] prompt = new Random(10).ints(300, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.05).set("hash_seed", "0").set("enable_blending", true)
                .set("blend_recompute_ratios", List.of(0.5)).set("blend_check_layers", List.of(0))
                .set("blend_min_tokens", 16).build();
        FailingLock lock = new FailingLock();
        try (LMCacheEngine engine = BlendedPrefill.sharedEngine(config, CachedPrefill.metadata(model, "synthetic/failing"), List.of());
             CachedPrefill cached = new CachedPrefill(engine, model, lock);
             BlendedPrefill blended = new BlendedPrefill(engine, model, BlendSettings.from(config, model), lock)) {
            List<Supplier<AutoCloseable>> prefills = List.of(() -> cached.prefill(prompt), () -> cached.prefillWithoutCache(prompt),
                    () -> blended.prefill(prompt));
            Runnable failing = () -> {
                for (Supplier<AutoCloseable> prefill : prefills) {
                    lock.failAtCall(2);
                    IllegalStateException e = assertThrows(IllegalStateException.class, () -> prefill.get().close());
                    assertEquals("forward call 2 failed", e.getMessage());
                }
            };
            failing.run(); // the same shapes every time: one round takes every tensor the next needs
            assertPoolStopsGrowing(failing);
            assertNoTensorIsReadyTwice();
            assertFalse(lock.isLocked(), "the failed call holds no lock");
        }
    }

    /**
     * Runs {@code round} three more times and checks the pool grew by less than {@link #SCHEDULING_SLACK}
     * in all: a round that keeps even one KV page or a logits tensor adds more than that every time.
     * Not exact, since Jlama's forward pass takes head-sized scratch tensors (64 bytes here) on its
     * pool threads, and how many are live at once depends on scheduling: CI runs needed one, and
     * once 33, more than the rounds before.
     */
    private static void assertPoolStopsGrowing(Runnable round) throws ReflectiveOperationException {
        long warm = pooledBytes();
        assertTrue(warm < (100L << 20) - (1L << 20), "the pool is below its 100 MB, so a tensor not given back would count: " + warm);
        for (int i = 0; i < 3; i++) {
            round.run();
        }
        long grown = pooledBytes() - warm;
        assertTrue(grown < SCHEDULING_SLACK, "every tensor was given back and reused: three rounds took " + grown
                + " more bytes from the pool (at most " + SCHEDULING_SLACK + " for scratch tensors live at once)");
    }

    /**
     * A tensor given back twice waits in the pool twice, and two later users get the same memory:
     * each pool queue, drained, holds distinct tensors (put back in the same order).
     */
    private static void assertNoTensorIsReadyTwice() throws ReflectiveOperationException {
        Field f = TensorCache.class.getDeclaredField("availableByShape");
        f.setAccessible(true);
        for (Object q : ((Map<?, ?>) f.get(TensorCache.instance)).values()) {
            @SuppressWarnings("unchecked")
            Queue<Object> queue = (Queue<Object>) q;
            List<Object> ready = new ArrayList<>();
            for (Object t = queue.poll(); t != null; t = queue.poll()) {
                ready.add(t);
            }
            ready.forEach(queue::offer);
            Set<Object> distinct = Collections.newSetFromMap(new IdentityHashMap<>());
            distinct.addAll(ready);
            assertEquals(ready.size(), distinct.size(), "a tensor was given back twice and waits in the pool twice: " + ready);
        }
    }

    /** A real lock whose n-th acquisition from now fails, standing for a forward call that throws. */
    private static final class FailingLock extends ReentrantLock {
        private int failing;
        private int calls;

        void failAtCall(int call) {
            failing = call;
            calls = 0;
        }

        @Override
        public void lock() {
            if (++calls == failing) {
                throw new IllegalStateException("forward call " + calls + " failed");
            }
            super.lock();
        }
    }

    /**
     * Empties the pool's queues of tensors ready for reuse, which earlier tests in this JVM filled:
     * a tensor not given back would otherwise be replaced by one of those, and the count not grow.
     */
    @BeforeEach
    void forgetReadyTensors() throws ReflectiveOperationException {
        Field f = TensorCache.class.getDeclaredField("availableByShape");
        f.setAccessible(true);
        ((Map<?, ?>) f.get(TensorCache.instance)).clear();
    }

    private static long pooledBytes() throws ReflectiveOperationException {
        Field f = TensorCache.class.getDeclaredField("currentBytes");
        f.setAccessible(true);
        return ((AtomicLong) f.get(TensorCache.instance)).get();
    }

    private static int[] join(int[]... parts) {
        return Arrays.stream(parts).flatMapToInt(Arrays::stream).toArray();
    }
}
