package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.connector.KvConnector;

/**
 * A real transformer's KV through every tier: Jlama's forward pass on the tiny synthetic Llama,
 * cold against warm from the CPU tier, from the disk tier and from a remote tier (a shared file system). Every
 * warm request's greedy tokens must equal the cold path's, and its logits must too (bit for bit
 * once the JIT is warm; the bound here leaves room only for a kernel compiled mid-test).
 */
class CachedPrefillTest {
    private static final int DECODE = 6;
    /** LMCache's tier names, as {@code StorageManager.tierNames()} gives them. */
    private static final String CPU_TIER = "LocalCPUBackend";
    private static final String DISK_TIER = "LocalDiskBackend";
    private static final String REMOTE_TIER = "RemoteBackend";
    private static final float LOGIT_TOLERANCE = 1e-4f;

    @TempDir
    static Path dir;
    private static AbstractModel model;
    private static String modelName;

    @BeforeAll
    static void loadModel() throws IOException {
        Path modelDir = SyntheticLlama.tiny().writeTo(dir.resolve("model"));
        model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        modelName = "synthetic/tiny";
        // Warm the JIT on Jlama's kernels, as a serving process is after its first requests.
        try (LMCacheEngine engine = engine(Map.of()); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            for (int i = 0; i < 3; i++) {
                try (CachedPrefill.Prefill p = prefill.prefillWithoutCache(prompt(700, 100 + i))) {
                    p.decode(2);
                }
            }
        }
    }

    @AfterAll
    static void closeModel() {
        model.close();
    }

    private static LMCacheEngine engine(Map<String, Object> extra) {
        ConfigLoader.Builder config = ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", 256).set("max_local_cpu_size", 0.05).set("hash_seed", "0");
        extra.forEach(config::set);
        return LMCacheEngine.create(config.build(), CachedPrefill.metadata(model, modelName), KvConnector.host(1), List.of());
    }

    private static int[] prompt(int tokens, long seed) {
        return new Random(seed).ints(tokens, 3, SyntheticLlama.VOCAB_SIZE).toArray();
    }

    /** The cold path's outputs for a prompt: the cache bypassed. */
    private record Outputs(int[] tokens, float[] logits) {
    }

    private static Outputs cold(CachedPrefill prefill, int[] prompt) {
        try (CachedPrefill.Prefill p = prefill.prefillWithoutCache(prompt)) {
            assertEquals(0, p.cachedTokens());
            return new Outputs(p.decode(DECODE), p.logits());
        }
    }

    /** A cached prefill: asserts what came from the cache and that its outputs are the cold path's. */
    private static void assertWarm(CachedPrefill prefill, int[] prompt, int expectedCached, Outputs cold) {
        try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
            assertEquals(expectedCached, p.cachedTokens(), "prompt tokens from the cache");
            assertArrayEquals(cold.tokens(), p.decode(DECODE), "greedy tokens after a warm prefill");
            float[] logits = p.logits();
            float worst = 0;
            for (int i = 0; i < logits.length; i++) {
                worst = Math.max(worst, Math.abs(logits[i] - cold.logits()[i]));
            }
            assertTrue(worst <= LOGIT_TOLERANCE, "last position's logits differ by " + worst);
        }
    }

    @Test
    void warmFromTheCpuTierGivesTheColdOutputs() {
        try (LMCacheEngine engine = engine(Map.of()); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            int[] first = prompt(1_100, 1);
            Outputs cold = cold(prefill, first);
            try (CachedPrefill.Prefill p = prefill.prefill(first)) {
                assertEquals(0, p.cachedTokens(), "nothing cached yet");
                assertEquals(1_024, p.storedTokens(), "four full chunks stored");
                assertArrayEquals(cold.tokens(), p.decode(DECODE));
            }
            assertWarm(prefill, first, 1_024, cold);

            // The next turn of the conversation: the first turn's chunks are reused.
            int[] second = Arrays.copyOf(first, 1_500);
            System.arraycopy(prompt(400, 2), 0, second, 1_100, 400);
            assertWarm(prefill, second, 1_024, cold(prefill, second));
        }
    }

    @Test
    void aPromptCachedWholeRecomputesOnlyItsLastToken() {
        try (LMCacheEngine engine = engine(Map.of()); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            int[] prompt = prompt(768, 3);
            Outputs cold = cold(prefill, prompt);
            try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
                assertEquals(768, p.storedTokens());
            }
            assertWarm(prefill, prompt, 767, cold);
        }
    }

    @Test
    void atChunkSize128TheReusedPrefixEndsOnJlamasBatch() {
        assertEquals(256, CachedPrefill.JLAMA_BATCH, "Jlama's default batch");
        try (LMCacheEngine engine = engine(Map.of("chunk_size", 128)); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            int[] prompt = prompt(700, 7);
            Outputs cold = cold(prefill, prompt);
            try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
                assertEquals(640, p.storedTokens(), "five chunks of 128 stored");
            }
            // 640 tokens are cached, but Jlama computes [512, 700) in one batch when cold: reusing up to 640 would
            // compute [640, 700) in a batch of its own, so the prefix reused ends at 512, a multiple of both.
            assertWarm(prefill, prompt, 512, cold);
        }
    }

    @Test
    void aChunkAcrossTwoOfJlamasKvPagesComesBackWhole() {
        try (LMCacheEngine engine = engine(Map.of("chunk_size", 768)); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            int perPage;
            try (CachedPrefill.Prefill probe = prefill.prefillWithoutCache(new int[] {3})) {
                perPage = probe.kv().buffer().getKeyTensorsUptoPosition(0, probe.kv().capacity() - 1)[0].shape().first();
            }
            assertTrue(perPage % 768 != 0 && perPage < 3 * 768, "chunk 2, [1536, 2304), must cross the page that ends at "
                    + perPage);
            int[] prompt = prompt(3 * 768 + 6, 8);
            Outputs cold = cold(prefill, prompt);
            try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
                assertEquals(3 * 768, p.storedTokens(), "three chunks stored, the last gathered from two pages");
            }
            assertWarm(prefill, prompt, 3 * 768, cold); // and scattered back into two pages
        }
    }

    @Test
    void warmFromTheDiskTierGivesTheColdOutputs() {
        Map<String, Object> disk = Map.of("local_disk", dir.resolve("disk").toString(), "max_local_disk_size", 0.05);
        try (LMCacheEngine engine = engine(disk); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            int[] prompt = prompt(900, 4);
            Outputs cold = cold(prefill, prompt);
            storeThenKeepOnlyIn(engine, prefill, prompt, DISK_TIER);
            assertWarm(prefill, prompt, 768, cold);
        }
    }

    @Test
    void warmFromASharedRemoteGivesTheColdOutputs() {
        // The remote tier over a shared file system; the lm:// server's turn is bench's ModelDemoTest.
        Map<String, Object> remote = Map.of("remote_url", "fs://" + dir.resolve("shared").toAbsolutePath());
        try (LMCacheEngine engine = engine(remote); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            int[] prompt = prompt(800, 5);
            Outputs cold = cold(prefill, prompt);
            storeThenKeepOnlyIn(engine, prefill, prompt, REMOTE_TIER);
            assertWarm(prefill, prompt, 768, cold);
        }
    }

    /** Stores the prompt, waits until {@code tier} holds every full chunk, then empties the CPU tier. */
    private static void storeThenKeepOnlyIn(LMCacheEngine engine, CachedPrefill prefill, int[] prompt, String tier) {
        try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
            assertEquals(0, p.cachedTokens());
        }
        StorageBackend backend = engine.storage().tier(tier).orElseThrow();
        PreparedRequest request = engine.prepare(Arrays.copyOf(prompt, prompt.length / 256 * 256), Map.of());
        long deadline = System.nanoTime() + 20_000_000_000L;
        for (ChunkRange chunk : request.chunks()) {
            while (!backend.contains(chunk.key(), false)) {
                assertTrue(System.nanoTime() < deadline, tier + " never held chunk " + chunk);
                Thread.onSpinWait();
            }
        }
        // A chunk whose write below is still in flight is not evictable yet: clear until none is left.
        StorageBackend cpu = engine.storage().tier(CPU_TIER).orElseThrow();
        while (true) {
            cpu.clear();
            if (cpu.residentKeys().orElseThrow().isEmpty()) {
                break;
            }
            assertTrue(System.nanoTime() < deadline, "the CPU tier kept " + cpu.residentKeys().orElseThrow().size() + " chunk(s)");
            Thread.onSpinWait();
        }
    }

    @Test
    void storedChunksAreLmcachesWholeChunkFormatWithJlamasBytes() {
        try (LMCacheEngine engine = engine(Map.of()); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            int[] prompt = prompt(520, 6);
            try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
                PreparedRequest request = engine.prepare(prompt, Map.of());
                ChunkRange second = request.chunks().get(1);
                MemoryObj obj = engine.storage().get(second.key()).orElseThrow();
                try {
                    ModelMetadata m = engine.metadata();
                    int hidden = m.numKvHeads() * m.headSize();
                    assertEquals(MemoryFormat.KV_2LTD, obj.format());
                    assertEquals(lmcache4j.allocator.DType.FLOAT32, obj.dtype());
                    assertEquals(TensorShape.of(2, m.numLayers(), 256, hidden), obj.shape());
                    MemorySegment bytes = obj.segment();
                    for (int plane = 0; plane < 2; plane++) {
                        for (int layer = 0; layer < m.numLayers(); layer++) {
                            for (int t : new int[] {0, 1, 127, 255}) {
                                AbstractTensor row = plane == 0 ? p.kv().buffer().getKeyTensorForPosition(layer, 256 + t)
                                        : p.kv().buffer().getValTensorForPosition(layer, 256 + t);
                                for (int e = 0; e < hidden; e++) {
                                    long offset = ((((long) plane * m.numLayers() + layer) * 256 + t) * hidden + e) * Float.BYTES;
                                    assertEquals(row.get(0, e), bytes.get(ValueLayout.JAVA_FLOAT_UNALIGNED, offset),
                                            "plane " + plane + " layer " + layer + " token " + t + " element " + e);
                                }
                            }
                        }
                    }
                } finally {
                    obj.release();
                }
            }
        }
    }

    @Test
    void badPromptsAndMismatchedEnginesAreRefusedWithTheReason() {
        try (LMCacheEngine engine = engine(Map.of()); CachedPrefill prefill = new CachedPrefill(engine, model)) {
            assertTrue(assertThrows(IllegalArgumentException.class, () -> prefill.prefill(new int[0]))
                    .getMessage().contains("1 to"));
            assertTrue(assertThrows(IllegalArgumentException.class, () -> prefill.prefill(new int[] {1, 2, 5_000}))
                    .getMessage().contains("outside the vocabulary"));
            assertTrue(assertThrows(IllegalArgumentException.class, () -> prefill.prefill(new int[] {-1}))
                    .getMessage().contains("token 0 is -1"));
            int positions = model.getConfig().contextLength;
            assertThrows(IllegalArgumentException.class, () -> prefill.prefill(prompt(positions, 1)));
            assertThrows(NullPointerException.class, () -> prefill.prefill(null));
        }
        ModelMetadata other = new ModelMetadata(modelName, 1, 0, lmcache4j.allocator.DType.FLOAT32, 3, 2, 16, false);
        try (LMCacheEngine engine = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of())
                .set("max_local_cpu_size", 0.01).build(), other, KvConnector.host(1), List.of())) {
            assertTrue(assertThrows(IllegalArgumentException.class, () -> new CachedPrefill(engine, model))
                    .getMessage().contains("the Jlama model's KV is"));
        }
    }
}
