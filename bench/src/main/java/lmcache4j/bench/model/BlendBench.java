package lmcache4j.bench.model;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Collectors;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.jlama.BlendSettings;
import lmcache4j.jlama.BlendedPrefill;
import lmcache4j.jlama.CachedPrefill;

/**
 * CacheBlend on a real transformer (Jlama): a retrieval prompt (a system prompt, documents cached
 * earlier each from a prompt of its own, now in another order, and a question) prefilled with
 * blending at several recompute ratios against the full prefill of the same prompt, in one process.
 * For each ratio: time to first token both ways (medians, runs interleaved), the share of the full
 * prefill's token-layers the blend computed and the speedup that share predicts, and how far the
 * output moved: the last position's logits (largest difference, KL divergence of the full prefill's
 * distribution from the blend's) and the greedy tokens (share of {@value #DECODE} equal).
 *
 * <p>The synthetic model's weights are random: its deviation figures say nothing of answer quality,
 * only that the blend ran; with {@code --model DIR} the same figures come from real weights.
 */
public final class BlendBench {
    /** Greedy tokens compared per ratio. */
    public static final int DECODE = 16;

    /**
     * @param ratios         recompute ratios
     * @param documents      documents in the prompt
     * @param documentTokens tokens per document
     * @param runs           blended prefills per ratio, and full prefills in all (half before the ratios, half after; at least one each)
     * @param checkLayer     the check layer ({@code blend_check_layers})
     * @param seed           the workload's seed
     */
    public record Settings(double[] ratios, int documents, int documentTokens, int runs, int checkLayer, long seed) {
        public static final double[] DEFAULT_RATIOS = {0, 0.05, 0.15, 0.3, 1.0};
        public static final int DEFAULT_DOCUMENTS = 6;
        public static final int DEFAULT_DOCUMENT_TOKENS = 1_024;
        public static final int DEFAULT_RUNS = 1;

        public Settings {
            ratios = ratios.clone();
            if (ratios.length == 0 || documents < 1 || documentTokens < 1 || runs < 1 || checkLayer < 0) {
                throw new IllegalArgumentException("at least one ratio, document, token and run, and a check layer of 0 or more");
            }
        }
    }

    /**
     * One ratio's figures.
     *
     * @param ttftMs             blended prefill, median
     * @param ttftFullMs         full prefill of the same prompt, median (timed before and after the ratios)
     * @param recomputedFraction token-layers computed over the full prefill's
     * @param logitsMaxAbsDiff   last position, against the full prefill
     * @param klDivergence       KL(full ‖ blend) of the last position's softmax, in nats
     * @param greedyAgreement    share of {@value #DECODE} greedy tokens equal to the full prefill's
     */
    public record Row(double ratio, double ttftMs, double ttftFullMs, double recomputedFraction, int reusedTokens,
                      int recomputedTokens, double logitsMaxAbsDiff, double klDivergence, double greedyAgreement) {
        public double speedup() {
            return ttftFullMs / ttftMs;
        }

        public double predictedSpeedup() {
            return 1 / recomputedFraction;
        }
    }

    /** The figures and the prompt's shape. */
    public record Result(List<Row> rows, int promptTokens, int layers, int checkLayer) {
    }

    private BlendBench() {
    }

    /** Runs the benchmark; progress lines go to {@code log}. */
    public static Result run(Settings s, AbstractModel model, String modelName, PrintStream log) {
        int layers = model.getConfig().numberOfLayers;
        if (s.checkLayer() >= layers) {
            throw new IllegalArgumentException("check layer " + s.checkLayer() + " is past this model's " + layers + " layers");
        }
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 2.0).set("hash_seed", "0").set("enable_blending", true)
                .set("blend_recompute_ratios", List.of(s.ratios()[0])).set("blend_check_layers", List.of(s.checkLayer()))
                .build();
        BlendSettings base = BlendSettings.from(config, model);
        Workload w = new Workload(s, base.separator(), model.getConfig().vocabularySize);
        int[] prompt = w.prompt();
        if (prompt.length >= model.getConfig().contextLength) {
            throw new IllegalArgumentException("the prompt's " + prompt.length + " tokens do not fit this model's "
                    + model.getConfig().contextLength + " positions: fewer or shorter documents");
        }
        List<Row> rows = new ArrayList<>();
        try (LMCacheEngine engine = BlendedPrefill.sharedEngine(config, CachedPrefill.metadata(model, modelName), List.of());
             CachedPrefill plain = new CachedPrefill(engine, model)) {
            log.println("bench blend: warming up the JIT and caching " + s.documents() + " documents of " + s.documentTokens()
                    + " tokens, each from a prompt of its own");
            try (BlendedPrefill warm = new BlendedPrefill(engine, model, base.withRecomputeRatio(0.15))) {
                for (int d = 0; d < s.documents(); d++) {
                    warm.prefill(w.single(d)).close();
                }
                // The blended path once for the JIT, with a question of its own: the measured prompt's stays uncached.
                warm.prefill(w.warmUp(), false).close();
                plain.prefillWithoutCache(w.single(0)).close();
            }
            // The full prefill is the same for every ratio: timed before the ratios and after them (its
            // median is each ratio's baseline), so a drift of the machine's speed falls on both sides.
            Full full = full(plain, prompt, s.runs(), log, "before");
            List<Blend> blends = new ArrayList<>();
            for (double ratio : s.ratios()) {
                try (BlendedPrefill blend = new BlendedPrefill(engine, model, base.withRecomputeRatio(ratio))) {
                    blends.add(blend(blend, prompt, ratio, s.runs(), log));
                }
            }
            Full after = full(plain, prompt, s.runs(), log, "after");
            double[] times = new double[full.times().length + after.times().length];
            System.arraycopy(full.times(), 0, times, 0, full.times().length);
            System.arraycopy(after.times(), 0, times, full.times().length, after.times().length);
            double fullMs = TtftBench.median(times);
            for (Blend b : blends) {
                Row row = new Row(b.ratio(), b.ms(), fullMs, b.fraction(), b.reused(), b.recomputed(),
                        maxAbsDiff(full.logits(), b.logits()), klDivergence(full.logits(), b.logits()),
                        agreement(full.tokens(), b.tokens()));
                log.printf("bench blend: ratio %.2f: %.3f of the compute, speedup %.2fx (predicted %.2fx), KL %.3g, greedy %.2f%n",
                        row.ratio(), row.recomputedFraction(), row.speedup(), row.predictedSpeedup(), row.klDivergence(),
                        row.greedyAgreement());
                rows.add(row);
            }
        }
        return new Result(rows, prompt.length, layers, s.checkLayer());
    }

    /** Full prefills of the prompt: their times, and the first one's logits and greedy tokens. */
    private record Full(double[] times, float[] logits, int[] tokens) {
    }

    /** A ratio's blended prefills: the median time, what was computed, and the last one's output. */
    private record Blend(double ratio, double ms, double fraction, int reused, int recomputed, float[] logits, int[] tokens) {
    }

    private static Full full(CachedPrefill plain, int[] prompt, int runs, PrintStream log, String when) {
        int n = Math.max(1, runs / 2);
        double[] times = new double[n];
        float[] logits = null;
        int[] tokens = null;
        for (int r = 0; r < n; r++) {
            try (CachedPrefill.Prefill p = plain.prefillWithoutCache(prompt)) {
                times[r] = p.timeToFirstTokenNanos() / 1e6;
                logits = p.logits();
                tokens = p.decode(DECODE);
            }
            log.printf("bench blend: full prefill (%s the ratios) %.0f ms%n", when, times[r]);
        }
        return new Full(times, logits, tokens);
    }

    private static Blend blend(BlendedPrefill blend, int[] prompt, double ratio, int runs, PrintStream log) {
        double[] times = new double[runs];
        Blend last = null;
        for (int r = 0; r < runs; r++) {
            try (BlendedPrefill.Result b = blend.prefill(prompt, false)) {
                times[r] = b.prefill().timeToFirstTokenNanos() / 1e6;
                last = new Blend(ratio, 0, b.recomputedFraction(), b.prefill().cachedTokens(), b.recomputedTokens(),
                        b.prefill().logits(), b.prefill().decode(DECODE));
            }
            log.printf("bench blend: ratio %.2f, run %d: %.0f ms%n", ratio, r + 1, times[r]);
        }
        return new Blend(ratio, TtftBench.median(times), last.fraction(), last.reused(), last.recomputed(), last.logits(),
                last.tokens());
    }

    static double maxAbsDiff(float[] a, float[] b) {
        double worst = 0;
        for (int i = 0; i < a.length; i++) {
            worst = Math.max(worst, Math.abs((double) a[i] - b[i]));
        }
        return worst;
    }

    /** KL(p ‖ q) of the softmaxes of two logit vectors, in nats. */
    static double klDivergence(float[] p, float[] q) {
        double[] lp = logSoftmax(p);
        double[] lq = logSoftmax(q);
        double kl = 0;
        for (int i = 0; i < lp.length; i++) {
            kl += Math.exp(lp[i]) * (lp[i] - lq[i]);
        }
        return Math.max(0, kl);
    }

    private static double[] logSoftmax(float[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, l);
        }
        double sum = 0;
        for (float l : logits) {
            sum += Math.exp(l - max);
        }
        double log = max + Math.log(sum);
        double[] out = new double[logits.length];
        for (int i = 0; i < logits.length; i++) {
            out[i] = logits[i] - log;
        }
        return out;
    }

    static double agreement(int[] a, int[] b) {
        int same = 0;
        for (int i = 0; i < a.length; i++) {
            same += a[i] == b[i] ? 1 : 0;
        }
        return (double) same / a.length;
    }

    /** A system prompt, the documents and a question, random tokens without the separator's. */
    private static final class Workload {
        private final int[] separator;
        private final int[] system;
        private final int[][] documents;
        private final int[] question;
        private final int[] warmUpQuestion;
        private final int[] order;

        Workload(Settings s, int[] separator, int vocabulary) {
            this.separator = separator;
            Set<Integer> banned = Arrays.stream(separator).boxed().collect(Collectors.toSet());
            SplittableRandom random = new SplittableRandom(s.seed());
            system = BlendDemo.text(random, 64, vocabulary, banned);
            documents = new int[s.documents()][];
            for (int d = 0; d < documents.length; d++) {
                documents[d] = BlendDemo.text(random, s.documentTokens(), vocabulary, banned);
            }
            question = BlendDemo.text(random, 32, vocabulary, banned);
            warmUpQuestion = BlendDemo.text(random, 32, vocabulary, banned);
            // The documents in another order than they were cached in: reversed, then rotated by one.
            order = new int[documents.length];
            for (int i = 0; i < order.length; i++) {
                order[i] = (order.length - 1 - i + 1) % order.length;
            }
        }

        /** The system prompt, the documents in their cached order and another question. */
        int[] warmUp() {
            List<int[]> parts = new ArrayList<>();
            parts.add(system);
            parts.addAll(Arrays.asList(documents));
            parts.add(warmUpQuestion);
            return BlendDemo.join(separator, parts);
        }

        int[] single(int d) {
            return BlendDemo.join(separator, List.of(system, documents[d]));
        }

        int[] prompt() {
            List<int[]> parts = new ArrayList<>();
            parts.add(system);
            for (int d : order) {
                parts.add(documents[d]);
            }
            parts.add(question);
            return BlendDemo.join(separator, parts);
        }
    }
}
