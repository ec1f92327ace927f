package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import java.util.stream.IntStream;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.SegmentTokenDatabase;
import lmcache4j.engine.key.TokenDatabase;
import lmcache4j.engine.storage.StorageBackend;

/**
 * CacheBlend on a real transformer (a 4-layer synthetic Llama, check layer 1): documents cached in
 * one order are reused in another. At a recompute ratio of 1 the blended prefill must give the full
 * prefill's greedy tokens and last-position logits bit for bit (after the JIT warm-up), from every
 * tier; below 1 it recomputes exactly the selected share.
 */
class BlendedPrefillTest {
    private static final int DECODE = 6;
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
        try (LMCacheEngine engine = engine(Map.of(), 1.0); BlendedPrefill blend = blend(engine);
             CachedPrefill plain = new CachedPrefill(engine, model)) {
            Workload w = new Workload(11);
            for (int i = 0; i < 2; i++) {
                try (BlendedPrefill.Result r = blend.prefill(w.rag(2, 0, 1))) {
                    r.prefill().decode(2);
                }
                try (CachedPrefill.Prefill p = plain.prefillWithoutCache(w.rag(1, 2, 0))) {
                    p.decode(2);
                }
            }
        }
    }

    @AfterAll
    static void closeModel() {
        model.close();
    }

    private static LMCacheEngineConfig config(Map<String, Object> extra, double ratio) {
        ConfigLoader.Builder config = ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", 256).set("max_local_cpu_size", 0.05).set("hash_seed", "0")
                .set("enable_blending", true).set("blend_recompute_ratios", List.of(ratio))
                .set("blend_check_layers", List.of(1)).set("blend_min_tokens", 64);
        extra.forEach(config::set);
        return config.build();
    }

    private static LMCacheEngine engine(Map<String, Object> extra, double ratio) {
        LMCacheEngineConfig config = config(extra, ratio);
        return BlendedPrefill.engine(config, CachedPrefill.metadata(model, "synthetic/blend"), BlendSettings.from(config, model),
                List.of());
    }

    /** An engine for prefix and blended requests both. */
    private static LMCacheEngine sharedEngine(Map<String, Object> extra, double ratio) {
        return BlendedPrefill.sharedEngine(config(extra, ratio), CachedPrefill.metadata(model, "synthetic/blend"), List.of());
    }

    /** The keys a BlendedPrefill on {@code engine} gives the segments of {@code tokens}. */
    private static List<ChunkRange> segmentKeys(LMCacheEngine engine, int[] tokens) {
        TokenDatabase own = engine.tokenDatabase();
        if (own instanceof SegmentTokenDatabase) {
            return engine.prepare(tokens, Map.of()).chunks();
        }
        SegmentTokenDatabase segments = SegmentTokenDatabase.besidePrefixes(separator, own.hasher(), own.keyFactory(),
                own.storageKeys());
        return engine.prepare(tokens, null, Map.of(BlendedPrefill.SEGMENT_TAG, "1"), segments).chunks();
    }

    private static BlendedPrefill blend(LMCacheEngine engine) {
        return new BlendedPrefill(engine, model, BlendSettings.from(engine.config(), model));
    }

    /** A system prompt, three documents and a question, none containing the separator's tokens. */
    private static final class Workload {
        final int[] system;
        final int[][] docs = new int[3][];
        final int[] question;

        Workload(long seed) {
            Set<Integer> banned = Arrays.stream(separator).boxed().collect(Collectors.toSet());
            Random random = new Random(seed);
            system = text(random, 40, banned);
            for (int i = 0; i < docs.length; i++) {
                docs[i] = text(random, 300, banned);
            }
            question = text(random, 25, banned);
        }

        private static int[] text(Random random, int n, Set<Integer> banned) {
            return random.ints(3, SyntheticLlama.VOCAB_SIZE).filter(t -> !banned.contains(t)).limit(n).toArray();
        }

        /** system, separator, one document: how a document is cached. */
        int[] single(int doc) {
            return join(List.of(system, docs[doc]));
        }

        /** system, the documents in the order given, the question, separated. */
        int[] rag(int... order) {
            List<int[]> parts = new ArrayList<>();
            parts.add(system);
            for (int d : order) {
                parts.add(docs[d]);
            }
            parts.add(question);
            return join(parts);
        }

        /** Tokens of the prompt that come from cached segments (all but the question). */
        int cachedIn(int... order) {
            return system.length + IntStream.of(order).map(d -> docs[d].length).sum();
        }

        static int[] join(List<int[]> parts) {
            int[] out = new int[0];
            for (int[] part : parts) {
                int at = out.length;
                if (at > 0) {
                    out = Arrays.copyOf(out, at + separator.length);
                    System.arraycopy(separator, 0, out, at, separator.length);
                    at = out.length;
                }
                out = Arrays.copyOf(out, at + part.length);
                System.arraycopy(part, 0, out, at, part.length);
            }
            return out;
        }
    }

    /** Caches each document (with the system prompt) from a prompt of its own. */
    private static void cacheDocuments(BlendedPrefill blend, Workload w) {
        for (int d = 0; d < w.docs.length; d++) {
            try (BlendedPrefill.Result r = blend.prefill(w.single(d))) {
                assertTrue(r.prefill().storedTokens() >= w.docs[d].length, "document " + d + " stored");
            }
        }
    }

    @ParameterizedTest(name = "{0}, {1} engine")
    @CsvSource({"LocalCPUBackend, blending", "LocalDiskBackend, blending", "RemoteBackend, blending",
            "LocalCPUBackend, shared", "LocalDiskBackend, shared", "RemoteBackend, shared"})
    void atRatioOneTheBlendedPrefillIsTheFullPrefillFromEveryTier(String tier, String kind) {
        String place = kind + "-" + tier;
        Map<String, Object> extra = switch (tier) {
            case "LocalDiskBackend" -> Map.of("local_disk", dir.resolve("disk-" + place).toString(), "max_local_disk_size", 0.05);
            case "RemoteBackend" -> Map.of("remote_url", "fs://" + dir.resolve("shared-" + place).toAbsolutePath());
            default -> Map.of();
        };
        Workload w = new Workload(1);
        try (LMCacheEngine engine = kind.equals("shared") ? sharedEngine(extra, 1.0) : engine(extra, 1.0);
             BlendedPrefill blend = blend(engine);
             CachedPrefill plain = new CachedPrefill(engine, model)) {
            cacheDocuments(blend, w);
            if (!tier.equals(CPU_TIER)) {
                keepOnlyIn(engine, tier, w);
            }
            int[] prompt = w.rag(2, 0, 1);
            int[] fullTokens;
            float[] fullLogits;
            try (CachedPrefill.Prefill full = plain.prefillWithoutCache(prompt)) {
                fullTokens = full.decode(DECODE);
                fullLogits = full.logits();
            }
            try (BlendedPrefill.Result r = blend.prefill(prompt)) {
                assertEquals(w.cachedIn(2, 0, 1), r.prefill().cachedTokens(), "tokens reused from " + tier);
                float worst = 0;
                float[] logits = r.prefill().logits();
                for (int i = 0; i < logits.length; i++) {
                    worst = Math.max(worst, Math.abs(logits[i] - fullLogits[i]));
                }
                assertEquals(0f, worst, "last position's logits differ from the full prefill's by " + worst);
                assertArrayEquals(fullTokens, r.prefill().decode(DECODE), "greedy tokens");
                assertEquals(prompt.length, r.recomputedTokens(), "ratio 1 recomputes every position");
                assertEquals(1.0, r.recomputedFraction(), 1e-12);
            }
        }
    }

    /** Waits until the tier holds every cached segment, then empties the CPU tier above it. */
    private static void keepOnlyIn(LMCacheEngine engine, String tier, Workload w) {
        StorageBackend backend = engine.storage().tier(tier).orElseThrow();
        long deadline = System.nanoTime() + 20_000_000_000L;
        for (int d = 0; d < w.docs.length; d++) {
            for (ChunkRange segment : segmentKeys(engine, w.single(d))) {
                while (!backend.contains(segment.key(), false)) {
                    assertTrue(System.nanoTime() < deadline, tier + " never held segment " + segment);
                    Thread.onSpinWait();
                }
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
    void belowRatioOneOnlyTheSelectedShareIsRecomputedAfterTheCheckLayer() {
        Workload w = new Workload(2);
        try (LMCacheEngine engine = engine(Map.of(), 0.25); BlendedPrefill blend = blend(engine);
             CachedPrefill plain = new CachedPrefill(engine, model)) {
            cacheDocuments(blend, w);
            int[] prompt = w.rag(1, 2, 0);
            float[] fullLogits;
            try (CachedPrefill.Prefill full = plain.prefillWithoutCache(prompt)) {
                fullLogits = full.logits();
            }
            try (BlendedPrefill.Result r = blend.prefill(prompt)) {
                int cached = w.cachedIn(1, 2, 0);
                assertEquals(cached, r.prefill().cachedTokens());
                int recomputed = prompt.length - cached + (int) (cached * 0.25);
                assertEquals(recomputed, r.recomputedTokens(), "uncached positions and a quarter of the cached ones");
                // Layers 0 and 1 over every position, layers 2 and 3 over the recomputed ones.
                assertEquals((2.0 * prompt.length + 2.0 * recomputed) / (4.0 * prompt.length), r.recomputedFraction(), 1e-12);
                assertFalse(Arrays.equals(fullLogits, r.prefill().logits()), "cached KV was used, so the logits are not the full prefill's");
            }
        }
    }

    @Test
    void aPromptShorterThanBlendMinTokensReusesNothing() {
        Workload w = new Workload(3);
        try (LMCacheEngine engine = engine(Map.of("blend_min_tokens", 10_000), 1.0); BlendedPrefill blend = blend(engine)) {
            cacheDocuments(blend, w);
            try (BlendedPrefill.Result r = blend.prefill(w.rag(0, 1))) {
                assertEquals(0, r.prefill().cachedTokens());
            }
        }
    }

    @Test
    void prefixAndBlendedRequestsShareOneEngine() {
        Workload w = new Workload(4);
        try (LMCacheEngine engine = sharedEngine(Map.of(), 1.0); BlendedPrefill blend = blend(engine);
             CachedPrefill plain = new CachedPrefill(engine, model)) {
            cacheDocuments(blend, w);
            // A prefix request whose prompt holds the separator: keyed by prefix chunks all the same.
            int[] prefixPrompt = w.rag(0, 1);
            try (CachedPrefill.Prefill first = plain.prefill(prefixPrompt)) {
                assertEquals(0, first.cachedTokens(), "segments are never served as prefix chunks");
            }
            for (ChunkRange chunk : engine.prepare(prefixPrompt, Map.of()).chunks()) {
                assertTrue(engine.storage().contains(chunk.key(), false).isPresent(), "prefix chunk " + chunk + " stored");
                assertTrue(chunk.end() - chunk.start() <= 256, "prefix chunks, not segments: " + chunk);
            }
            try (CachedPrefill.Prefill again = plain.prefill(prefixPrompt)) {
                int reused = engine.config().saveUnfullChunk() ? prefixPrompt.length - 1 : prefixPrompt.length / 256 * 256;
                assertEquals(reused, again.cachedTokens(), "the prefix request's repeat");
            }
            // The documents in a new order, blended from the same engine, with the prefix chunks beside them.
            try (BlendedPrefill.Result r = blend.prefill(w.rag(1, 2, 0))) {
                assertEquals(w.cachedIn(1, 2, 0), r.prefill().cachedTokens(), "segments found in the shared engine");
            }
        }
    }

    @Test
    void aSegmentIsNeverServedAsThePrefixChunkOfTheSameTokens() {
        Workload w = new Workload(5);
        int[] document = Arrays.copyOf(w.docs[0], 256);
        int[] blended = Workload.join(List.of(w.system, document, w.question));
        // The same 256 tokens opening a prefix prompt: without the segment tag their prefix-chunk key
        // is the segment's, whose KV was computed after the system prompt.
        int[] prefixPrompt = Workload.join(List.of(document, w.question));
        try (LMCacheEngine engine = sharedEngine(Map.of(), 1.0); BlendedPrefill blend = blend(engine);
             CachedPrefill plain = new CachedPrefill(engine, model)) {
            try (BlendedPrefill.Result r = blend.prefill(blended)) {
                assertTrue(r.prefill().storedTokens() >= document.length, "the document's segment stored");
            }
            float[] fullLogits;
            try (CachedPrefill.Prefill full = plain.prefillWithoutCache(prefixPrompt)) {
                fullLogits = full.logits();
            }
            try (CachedPrefill.Prefill p = plain.prefill(prefixPrompt)) {
                assertEquals(0, p.cachedTokens(), "the segment's KV served as a prefix chunk");
                assertArrayEquals(fullLogits, p.logits());
            }
        }
    }

    @Test
    void aPrefixPrefillRefusesAnEngineThatKeysEverythingBySegment() {
        Workload w = new Workload(6);
        try (LMCacheEngine engine = engine(Map.of(), 1.0); CachedPrefill plain = new CachedPrefill(engine, model)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> plain.prefill(w.rag(0, 1)));
            assertTrue(e.getMessage().contains("sharedEngine"), e.getMessage());
        }
    }

    @Test
    void settingsThatCannotBlendAreRefusedNamingTheSetting() {
        assertRefused(ConfigLoader.builder().environment(Map.of()).build(), "enable_blending=true");
        assertRefused(ConfigLoader.builder().environment(Map.of()).set("enable_blending", true)
                .set("blend_check_layers", List.of(1)).build(), "blend_recompute_ratios");
        assertRefused(ConfigLoader.builder().environment(Map.of()).set("enable_blending", true)
                .set("blend_recompute_ratios", List.of(0.15)).build(), "blend_check_layers");
        assertRefused(config(Map.of("blend_thresholds", List.of(0.5)), 0.15), "blend_thresholds");
        assertRefused(config(Map.of("blend_check_layers", List.of(4)), 0.15), "past this model's 4 layers");
        assertRefused(config(Map.of("blend_check_layers", List.of(1, 2)), 0.15), "one check layer");
        assertRefused(config(Map.of(), 1.5), "0 to 1");
    }

    private static void assertRefused(LMCacheEngineConfig config, String fragment) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BlendSettings.from(config, model));
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
    }

    @Test
    void theSeparatorIsTheDefaultStringTokenizedWithoutBos() {
        LMCacheEngineConfig config = config(Map.of(), 0.15);
        int[] tokens = BlendSettings.from(config, model).separator();
        assertTrue(tokens.length > 0);
        assertFalse(tokens[0] == model.getConfig().bosToken, "no BOS: " + Arrays.toString(tokens));
        long[] encoded = model.getTokenizer().encode(" # # ");
        assertArrayEquals(Arrays.stream(encoded).filter(t -> t != model.getConfig().bosToken).mapToInt(Math::toIntExact).toArray(),
                tokens);
    }
}
