package lmcache4j.bench.model;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.stream.Collectors;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.jlama.BlendSettings;
import lmcache4j.jlama.BlendedPrefill;
import lmcache4j.jlama.CachedPrefill;

/**
 * A retrieval workload on a real transformer (Jlama), served three ways: a pool of documents is
 * ingested (each prefilled once after the system prompt), then each request is the system prompt,
 * documents drawn from the pool in random order, and a new question. Every request is prefilled in
 * full (plain Jlama), with prefix caching alone (a chunked engine that saw the same prompts), and
 * with blending (a segment engine); the blend at ratio 1 must give the full prefill's logits bit
 * for bit, and the blended requests must be faster than the full prefills. The last requests repeat
 * earlier prompts, where prefix caching serves almost everything too.
 */
public final class BlendDemo {
    static final int DECODE = 8;
    private static final int SYSTEM_TOKENS = 64;
    static final int QUESTION_TOKENS = 24;

    /**
     * @param seed       the workload's seed
     * @param documents  documents in the pool
     * @param requests   requests with documents in a new order (then two repeats)
     * @param perRequest documents per request
     * @param ratio      the blend's recompute ratio
     */
    public record Settings(long seed, int documents, int requests, int perRequest, double ratio) {
        public static Settings defaults(long seed) {
            return new Settings(seed, 6, 5, 3, 0.15);
        }

        public Settings {
            if (documents < 1 || requests < 1 || perRequest < 1 || perRequest > documents || !(ratio >= 0 && ratio <= 1)) {
                throw new IllegalArgumentException("a pool of at least one document, requests of 1 to " + documents
                        + " documents, and a ratio from 0 to 1");
            }
        }
    }

    /** One request served the three ways. */
    public record Served(String name, boolean repeat, int promptTokens, int reusedBlend, int reusedPrefix, double fullMs,
                         double prefixMs, double blendMs, double recomputedFraction, double logitsMaxAbsDiff,
                         double klDivergence, double greedyAgreement, boolean ratioOneIdentical) {
    }

    private BlendDemo() {
    }

    /** Runs the workload; each request is told to {@code progress} when served. */
    public static List<Served> run(Settings s, AbstractModel model, String modelName, Consumer<Served> progress) {
        // One engine serves the prefix-cached and the blended requests, as a service runs both.
        LMCacheEngineConfig blendConfig = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 2.0).set("hash_seed", "0").set("enable_blending", true)
                .set("blend_recompute_ratios", List.of(s.ratio())).set("blend_check_layers", List.of(1))
                .set("blend_min_tokens", 256).build();
        BlendSettings settings = BlendSettings.from(blendConfig, model);
        int vocabulary = model.getConfig().vocabularySize;
        Set<Integer> banned = Arrays.stream(settings.separator()).boxed().collect(Collectors.toSet());
        SplittableRandom random = new SplittableRandom(s.seed());
        int[] system = text(random, SYSTEM_TOKENS, vocabulary, banned);
        int[][] pool = new int[s.documents()][];
        for (int d = 0; d < pool.length; d++) {
            pool[d] = text(random, 150 + random.nextInt(251), vocabulary, banned);
        }
        List<Served> served = new ArrayList<>();
        try (LMCacheEngine engine = BlendedPrefill.sharedEngine(blendConfig, CachedPrefill.metadata(model, modelName), List.of());
             BlendedPrefill blend = new BlendedPrefill(engine, model, settings);
             BlendedPrefill everything = new BlendedPrefill(engine, model, settings.withRecomputeRatio(1.0));
             CachedPrefill prefix = new CachedPrefill(engine, model)) {
            for (int[] document : pool) {
                int[] ingest = join(settings.separator(), List.of(system, document));
                blend.prefill(ingest).close();
                prefix.prefill(ingest).close();
            }
            List<int[]> prompts = new ArrayList<>();
            for (int r = 0; r < s.requests(); r++) {
                List<int[]> parts = new ArrayList<>();
                parts.add(system);
                for (int d : pick(random, pool.length, s.perRequest())) {
                    parts.add(pool[d]);
                }
                parts.add(text(random, QUESTION_TOKENS, vocabulary, banned));
                prompts.add(join(settings.separator(), parts));
            }
            for (int r = 0; r < s.requests() + 2; r++) {
                boolean repeat = r >= s.requests();
                int[] prompt = prompts.get(repeat ? r - s.requests() : r);
                String name = repeat ? "repeat of request " + (r - s.requests() + 1) : "request " + (r + 1);
                Served one = serve(name, repeat, prompt, blend, everything, prefix);
                served.add(one);
                progress.accept(one);
            }
        }
        return served;
    }

    private static Served serve(String name, boolean repeat, int[] prompt, BlendedPrefill blend, BlendedPrefill everything,
                                CachedPrefill prefix) {
        float[] fullLogits;
        int[] fullTokens;
        double fullMs;
        try (CachedPrefill.Prefill p = prefix.prefillWithoutCache(prompt)) {
            fullMs = p.timeToFirstTokenNanos() / 1e6;
            fullLogits = p.logits();
            fullTokens = p.decode(DECODE);
        }
        double prefixMs;
        int reusedPrefix;
        try (CachedPrefill.Prefill p = prefix.prefill(prompt)) {
            prefixMs = p.timeToFirstTokenNanos() / 1e6;
            reusedPrefix = p.cachedTokens();
        }
        boolean identical;
        try (BlendedPrefill.Result all = everything.prefill(prompt, false)) {
            identical = Arrays.equals(fullLogits, all.prefill().logits()) && Arrays.equals(fullTokens, all.prefill().decode(DECODE));
        }
        try (BlendedPrefill.Result b = blend.prefill(prompt)) {
            float[] logits = b.prefill().logits();
            return new Served(name, repeat, prompt.length, b.prefill().cachedTokens(), reusedPrefix, fullMs, prefixMs,
                    b.prefill().timeToFirstTokenNanos() / 1e6, b.recomputedFraction(), BlendBench.maxAbsDiff(fullLogits, logits),
                    BlendBench.klDivergence(fullLogits, logits), BlendBench.agreement(fullTokens, b.prefill().decode(DECODE)),
                    identical);
        }
    }

    /** Whether the run passed: ratio 1 identical to the full prefill everywhere, and the blended requests faster in all. */
    public static boolean passed(List<Served> served) {
        return served.stream().allMatch(Served::ratioOneIdentical) && total(served, Served::blendMs) < total(served, Served::fullMs);
    }

    private static double total(List<Served> served, java.util.function.ToDoubleFunction<Served> f) {
        return served.stream().mapToDouble(f).sum();
    }

    /** The report: one line per request, the totals per request class, and the verdict. */
    public static String table(String model, Settings s, List<Served> served) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%-22s %6s %7s %7s %9s %9s %9s %9s %8s %7s %s%n", "request", "tokens", "blend", "prefix",
                "full ms", "prefix ms", "blend ms", "computed", "KL", "greedy", "ratio 1 = full"));
        for (Served r : served) {
            b.append(String.format(Locale.ROOT, "%-22s %6d %7d %7d %9.0f %9.0f %9.0f %9.3f %8.2g %7.2f %s%n", r.name(),
                    r.promptTokens(), r.reusedBlend(), r.reusedPrefix(), r.fullMs(), r.prefixMs(), r.blendMs(),
                    r.recomputedFraction(), r.klDivergence(), r.greedyAgreement(), r.ratioOneIdentical() ? "identical" : "DIFFERS"));
        }
        for (boolean repeat : new boolean[] {false, true}) {
            List<Served> group = served.stream().filter(r -> r.repeat() == repeat).toList();
            b.append(String.format(Locale.ROOT, "%s: %d requests, %.0f%% of prompt tokens reused by blending, %.0f%% by prefix "
                            + "caching; time to first token %.2fx faster blended, %.2fx with prefix caching (against full prefills)%n",
                    repeat ? "repeated prompts" : "documents in a new order", group.size(),
                    100 * total(group, Served::reusedBlend) / total(group, Served::promptTokens),
                    100 * total(group, Served::reusedPrefix) / total(group, Served::promptTokens),
                    total(group, Served::fullMs) / total(group, Served::blendMs),
                    total(group, Served::fullMs) / total(group, Served::prefixMs)));
        }
        b.append(String.format(Locale.ROOT, "model %s, recompute ratio %.2f, check layer 1. %s%n", model, s.ratio(),
                passed(served) ? "PASSED: at ratio 1 every request's logits and tokens equal the full prefill's, and blending "
                        + "is faster than full prefills" : "FAILED: a ratio-1 blend differs from its full prefill, or blending was "
                        + "not faster"));
        b.append("The synthetic model's weights are random: its KL and greedy columns say nothing of answer quality.");
        return b.toString();
    }

    /** The report as one JSON object. */
    public static String json(String model, Settings s, List<Served> served) {
        List<ReportJson> rows = served.stream().map(r -> new ReportJson().string("request", r.name()).bool("repeat", r.repeat())
                .integer("prompt_tokens", r.promptTokens()).integer("reused_blend", r.reusedBlend())
                .integer("reused_prefix", r.reusedPrefix()).number("ttft_full_prefill_ms", r.fullMs(), 2)
                .number("ttft_prefix_ms", r.prefixMs(), 2).number("ttft_blend_ms", r.blendMs(), 2)
                .number("recomputed_fraction", r.recomputedFraction(), 5).number("logits_max_abs_diff", r.logitsMaxAbsDiff(), 8)
                .number("kl_divergence", r.klDivergence(), 8).number("greedy_agreement", r.greedyAgreement(), 4)
                .bool("ratio_1_identical", r.ratioOneIdentical())).toList();
        return new ReportJson().string("model", model).number("recompute_ratio", s.ratio(), 4).integer("check_layer", 1)
                .bool("passed", passed(served)).objects("requests", rows).toString();
    }

    private static int[] pick(SplittableRandom random, int pool, int k) {
        int[] all = new int[pool];
        Arrays.setAll(all, i -> i);
        for (int i = pool - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        return Arrays.copyOf(all, k);
    }

    /** {@code n} random token ids of the vocabulary, none of them banned (the separator's) and none below 3 (special ids). */
    static int[] text(SplittableRandom random, int n, int vocabulary, Set<Integer> banned) {
        return random.ints(3, vocabulary).filter(t -> !banned.contains(t)).limit(n).toArray();
    }

    /** The parts in order with the separator's tokens between them: a prompt of segments. */
    static int[] join(int[] separator, List<int[]> parts) {
        int length = parts.stream().mapToInt(p -> p.length).sum() + (parts.size() - 1) * separator.length;
        int[] out = new int[length];
        int at = 0;
        for (int i = 0; i < parts.size(); i++) {
            if (i > 0) {
                System.arraycopy(separator, 0, out, at, separator.length);
                at += separator.length;
            }
            System.arraycopy(parts.get(i), 0, out, at, parts.get(i).length);
            at += parts.get(i).length;
        }
        return out;
    }
}
