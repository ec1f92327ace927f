package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.storage.StorageBackend;

/**
 * A prefill's pinning lookup leaves nothing pinned behind it: after a partial hit (the retrieve
 * naming the lookup id unpins) every chunk but the one a lookup left open on purpose pins is
 * evictable, and after a miss the id is unpinned at once, so the engine's pin monitor, which
 * releases lookups older than {@code pin_timeout_sec} (1 s here), finds only the open one.
 */
class PrefillLookupPinsTest {
    private static final String CPU_TIER = "LocalCPUBackend";

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
    void neitherAMissNorAPartialHitLeavesALookupPinned() throws InterruptedException {
        try (LMCacheEngine engine = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.05).set("hash_seed", "0").set("save_unfull_chunk", false)
                .set("pin_timeout_sec", 1).set("pin_check_interval_sec", 1).build(),
                CachedPrefill.metadata(model, "synthetic/pins"), KvConnector.host(1), List.of());
             CachedPrefill prefill = new CachedPrefill(engine, model)) {
            StorageBackend cpu = engine.storage().tier(CPU_TIER).orElseThrow();
            int[] prompt = new Random(4).ints(560, 3, SyntheticLlama.VOCAB_SIZE).toArray();
            int[] first = Arrays.copyOf(prompt, 256);
            try (CachedPrefill.Prefill miss = prefill.prefill(first)) {
                assertEquals(0, miss.cachedTokens(), "nothing cached yet: the lookup missed");
                assertEquals(256, miss.storedTokens());
            }
            try (CachedPrefill.Prefill partial = prefill.prefill(prompt)) {
                assertEquals(256, partial.cachedTokens(), "the first of two whole chunks was cached");
                assertEquals(256, partial.storedTokens());
            }
            // A lookup left open on purpose pins the first chunk; the prefills' lookups pin nothing now.
            assertEquals(256, engine.lookup(first, Map.of(), "left-open"));
            cpu.clear();
            assertEquals(1, cpu.residentKeys().orElseThrow().size(), "only the open lookup's chunk is pinned: the rest is evictable");
            // Once the pin monitor has released the open lookup, it has released every older one left
            // open too (in the same scan or an earlier one): the miss's lookup must not be among them.
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (true) {
                cpu.clear();
                if (cpu.residentKeys().orElseThrow().isEmpty()) {
                    break;
                }
                assertTrue(System.nanoTime() < deadline, "the pin monitor never released the open lookup");
                Thread.sleep(20);
            }
            assertEquals(1, engine.expiredLookupPins(), "only the lookup left open expired: the prefills ended theirs");
        }
    }
}
