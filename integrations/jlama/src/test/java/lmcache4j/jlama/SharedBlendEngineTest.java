package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.storage.StorageBackend;

/**
 * A {@link CachedPrefill} and a {@link BlendedPrefill} on one engine (a 4-layer synthetic Llama,
 * check layer 1): a prefix request's repeat hits its chunks, a blended request's documents in a new
 * order hit their segments, a prefix prompt holding the separator is still keyed as a prefix (never
 * served a segment's KV, computed after other text), and at ratio 1 the blend is the full prefill
 * bit for bit from every tier, with the other kind's chunks beside its own.
 */
class SharedBlendEngineTest {
    private static final int DECODE = 6;
    private static final float PREFIX_LOGIT_TOLERANCE = 1e-4f; // CachedPrefillTest's, for a prompt cached whole
    private static final String CPU_TIER = "LocalCPUBackend";

    @TempDir
    static Path dir;
    private static AbstractModel model;
    private static int[] separator;

    @BeforeAll
    static void loadModel() throws IOException {
        Path modelDir = new SyntheticLlama(64, 4, 4, 2, 128, 4_352, 7).writeTo(dir.resolve("model"));
        model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        separator = BlendSettings.separatorTokens(" # # ", model);
        // Warm the JIT on Jlama's kernels, as a serving process is after its first requests.
        try (LMCacheEngine engine = engine(Map.of()); BlendedPrefill blend = blend(engine);
             CachedPrefill prefix = new CachedPrefill(engine, model)) {
            Random random = new Random(11);
            int[] prompt = join(text(random, 40), text(random, 300), text(random, 300), text(random, 20));
            for (int i = 0; i < 2; i++) {
                try (BlendedPrefill.Result r = blend.prefill(prompt)) {
                    r.prefill().decode(2);
                }
                try (CachedPrefill.Prefill p = prefix.prefill(prompt)) {
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
        ConfigLoader.Builder builder = ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", 256).set("max_local_cpu_size", 0.05).set("hash_seed", "0")
                .set("enable_blending", true).set("blend_recompute_ratios", List.of(1.0))
                .set("blend_check_layers", List.of(1)).set("blend_min_tokens", 64);
        extra.forEach(builder::set);
        LMCacheEngineConfig config = builder.build();
        return BlendedPrefill.engine(config, CachedPrefill.metadata(model, "synthetic/shared"), BlendSettings.from(config, model),
                List.of());
    }

    private static BlendedPrefill blend(LMCacheEngine engine) {
        return new BlendedPrefill(engine, model, BlendSettings.from(engine.config(), model));
    }

    /** Random tokens without the separator's. */
    private static int[] text(Random random, int n) {
        Set<Integer> banned = Arrays.stream(separator).boxed().collect(Collectors.toSet());
        return random.ints(3, SyntheticLlama.VOCAB_SIZE).filter(t -> !banned.contains(t)).limit(n).toArray();
    }

    /** The parts with the separator between each two. */
    private static int[] join(int[]... parts) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < parts.length; i++) {
            if (i > 0) {
                Arrays.stream(separator).forEach(out::add);
            }
            Arrays.stream(parts[i]).forEach(out::add);
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    private record Full(int[] tokens, float[] logits) {
    }

    private static Full full(CachedPrefill prefix, int[] prompt) {
        try (CachedPrefill.Prefill p = prefix.prefillWithoutCache(prompt)) {
            return new Full(p.decode(DECODE), p.logits());
        }
    }

    private static float worst(float[] a, float[] b) {
        float worst = 0;
        for (int i = 0; i < a.length; i++) {
            worst = Math.max(worst, Math.abs(a[i] - b[i]));
        }
        return worst;
    }

    @Test
    void aPrefixRepeatHitsItsChunksAndBlendedDocumentsInANewOrderHitTheirSegments() {
        Random random = new Random(1);
        int[] system = text(random, 40);
        int[][] docs = {text(random, 300), text(random, 300), text(random, 300)};
        try (LMCacheEngine engine = engine(Map.of()); BlendedPrefill blend = blend(engine);
             CachedPrefill prefix = new CachedPrefill(engine, model)) {
            int[] first = join(system, docs[0], docs[1], docs[2], text(random, 25));
            try (BlendedPrefill.Result r = blend.prefill(first)) {
                assertEquals(0, r.prefill().cachedTokens());
            }
            int[] reordered = join(system, docs[2], docs[0], docs[1], text(random, 25));
            Full expected = full(prefix, reordered);
            try (BlendedPrefill.Result r = blend.prefill(reordered)) {
                assertEquals(40 + 900, r.prefill().cachedTokens(), "the system prompt and every document, from their segments");
                assertEquals(0f, worst(expected.logits(), r.prefill().logits()), "ratio 1 on the shared engine");
                assertArrayEquals(expected.tokens(), r.prefill().decode(DECODE));
            }
            // The same prompt as a prefix request: first nothing (its segments are not prefix chunks), then all of it.
            Full plain = full(prefix, reordered);
            try (CachedPrefill.Prefill p = prefix.prefill(reordered)) {
                assertEquals(0, p.cachedTokens(), "a prefix request was served segments");
                assertEquals(reordered.length, p.storedTokens());
            }
            try (CachedPrefill.Prefill p = prefix.prefill(reordered)) {
                assertEquals(reordered.length - 1, p.cachedTokens(), "the repeat hits every chunk, the partial last one too");
                assertArrayEquals(plain.tokens(), p.decode(DECODE));
                assertTrue(worst(plain.logits(), p.logits()) <= PREFIX_LOGIT_TOLERANCE);
            }
            try (BlendedPrefill.Result r = blend.prefill(reordered)) {
                // Every segment, the question's too, but the last position, which is always computed.
                assertEquals(40 + 900 + 25 - 1, r.prefill().cachedTokens(), "the blend still finds its segments beside the chunks");
            }
        }
    }

    @Test
    void aPrefixPromptHoldingTheSeparatorIsKeyedAsAPrefixNeverServedASegmentComputedAfterOtherText() {
        Random random = new Random(2);
        // A 256-token document: as a segment it spans exactly one chunk's tokens, so LMCache's own
        // segment key of it is the first chunk key of any prompt that starts with it.
        int[] document = text(random, 256);
        try (LMCacheEngine engine = engine(Map.of()); BlendedPrefill blend = blend(engine);
             CachedPrefill prefix = new CachedPrefill(engine, model)) {
            // Blended: the document after a system prompt, so its KV depends on that prompt.
            blend.prefill(join(text(random, 40), document, text(random, 20))).close();
            int[] prompt = join(document, text(random, 30));
            Full expected = full(prefix, prompt);
            try (CachedPrefill.Prefill p = prefix.prefill(prompt)) {
                assertEquals(0, p.cachedTokens(), "the prefix request took the document's segment for its first chunk");
                assertArrayEquals(expected.tokens(), p.decode(DECODE));
                assertEquals(0f, worst(expected.logits(), p.logits()));
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"LocalCPUBackend", "LocalDiskBackend", "RemoteBackend"})
    void atRatioOneTheBlendIsTheFullPrefillFromEveryTierWithPrefixChunksBeside(String tier) {
        Map<String, Object> extra = switch (tier) {
            case "LocalDiskBackend" -> Map.of("local_disk", dir.resolve("disk").toString(), "max_local_disk_size", 0.05);
            case "RemoteBackend" -> Map.of("remote_url", "fs://" + dir.resolve("shared").toAbsolutePath());
            default -> Map.of();
        };
        Random random = new Random(3);
        int[] system = text(random, 40);
        int[][] docs = {text(random, 300), text(random, 300)};
        int[] cachedOrder = join(system, docs[0], docs[1]);
        int[] prompt = join(system, docs[1], docs[0], text(random, 25));
        try (LMCacheEngine engine = engine(extra); BlendedPrefill blend = blend(engine);
             CachedPrefill prefix = new CachedPrefill(engine, model)) {
            blend.prefill(cachedOrder).close();
            prefix.prefill(prompt).close();
            if (!tier.equals(CPU_TIER)) {
                List<CacheKey> keys = new ArrayList<>();
                engine.prepareSegments(cachedOrder, Map.of()).chunks().stream().map(ChunkRange::key).forEach(keys::add);
                engine.prepare(prompt, Map.of()).chunks().stream().map(ChunkRange::key).forEach(keys::add);
                keepOnlyIn(engine, tier, keys);
            }
            Full expected = full(prefix, prompt);
            try (BlendedPrefill.Result r = blend.prefill(prompt, false)) {
                assertEquals(40 + 600, r.prefill().cachedTokens(), "segments from " + tier);
                assertEquals(0f, worst(expected.logits(), r.prefill().logits()), "blend at ratio 1 from " + tier);
                assertArrayEquals(expected.tokens(), r.prefill().decode(DECODE));
            }
            try (CachedPrefill.Prefill p = prefix.prefill(prompt)) {
                assertEquals(prompt.length - 1, p.cachedTokens(), "prefix chunks from " + tier);
                assertArrayEquals(expected.tokens(), p.decode(DECODE));
            }
        }
    }

    /** Waits until the tier holds every key, then empties the CPU tier above it. */
    private static void keepOnlyIn(LMCacheEngine engine, String tier, List<CacheKey> keys) {
        StorageBackend backend = engine.storage().tier(tier).orElseThrow();
        long deadline = System.nanoTime() + 20_000_000_000L;
        for (CacheKey key : keys) {
            while (!backend.contains(key, false)) {
                assertTrue(System.nanoTime() < deadline, tier + " never held " + key);
                Thread.onSpinWait();
            }
        }
        StorageBackend cpu = engine.storage().tier(CPU_TIER).orElseThrow();
        while (true) {
            cpu.clear();
            if (cpu.residentKeys().orElseThrow().isEmpty()) {
                break;
            }
            assertTrue(System.nanoTime() < deadline, "the CPU tier kept chunks");
            Thread.onSpinWait();
        }
    }

    @Test
    void aPrefixCacheOnAnEngineThatKeysEverythingBySegmentsIsRefused() {
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.01).set("hash_seed", "0").build();
        lmcache4j.engine.key.ChunkHasher hasher = lmcache4j.engine.key.ChunkHasher.seeded(
                lmcache4j.engine.key.HashAlgorithm.SHA256_CBOR, "0");
        var metadata = CachedPrefill.metadata(model, "synthetic/segments");
        var keys = new lmcache4j.engine.key.KeyFactory(metadata.modelName(), 1, 0, metadata.kvDtype());
        try (LMCacheEngine segmentsOnly = LMCacheEngine.create(config, metadata, KvConnector.host(1), List.of(),
                new lmcache4j.engine.key.SegmentTokenDatabase(separator, hasher, keys))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new CachedPrefill(segmentsOnly, model));
            assertTrue(e.getMessage().contains("prefix keys"), e.getMessage());
        }
        try (LMCacheEngine prefixOnly = LMCacheEngine.create(config, CachedPrefill.metadata(model, "synthetic/prefix"),
                KvConnector.host(1), List.of())) {
            LMCacheEngineConfig blendConfig = ConfigLoader.builder().environment(Map.of()).set("enable_blending", true)
                    .set("blend_recompute_ratios", List.of(0.15)).set("blend_check_layers", List.of(1)).build();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new BlendedPrefill(prefixOnly, model, BlendSettings.from(blendConfig, model)));
            assertTrue(e.getMessage().contains("createBlending"), e.getMessage());
        }
    }
}
