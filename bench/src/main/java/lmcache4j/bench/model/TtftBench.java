package lmcache4j.bench.model;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.jlama.CachedPrefill;

/**
 * Time to first token on a real transformer (Jlama), cold against warm, for prompts of a few
 * lengths, all measured in one process:
 * <ul>
 *   <li>{@code ttft_cold_ms}: plain Jlama, no cache (median over {@code runs} prompts);</li>
 *   <li>{@code ttft_miss_ms}: the same prompts through lmcache4j while nothing matches them (lookup,
 *       then the whole prefill); {@code miss_overhead}: the median of miss / cold, each pair run back
 *       to back on one prompt in alternating order; {@code miss_added_ms}: lmcache4j's own share of
 *       a miss (hashing and lookup before the forward pass), which the machine's noise does not blur;</li>
 *   <li>{@code store_overhead}: the store after such a prefill over the prefill's forward pass;</li>
 *   <li>{@code ttft_warm_ms}: the whole prompt cached in the CPU tier (median of 3), and
 *       {@code ttft_warm_disk_ms} with the CPU tier emptied first (median of 2);
 *       {@code speedup} = cold / warm.</li>
 * </ul>
 */
public final class TtftBench {
    /**
     * @param lengths prompt lengths in tokens
     * @param runs    cold and miss prompts per length (each a fresh prompt; more for short prompts, see {@link #pairs})
     * @param disk    the disk tier's directory
     * @param seed    the prompts' seed
     */
    public record Settings(int[] lengths, int runs, Path disk, long seed) {
        public static final int[] DEFAULT_LENGTHS = {1_024, 4_096, 8_192};
        public static final int DEFAULT_RUNS = 2;

        public Settings {
            lengths = lengths.clone();
            if (lengths.length == 0 || runs < 1) {
                throw new IllegalArgumentException("at least one length and one run");
            }
        }
    }

    /**
     * One prompt length's figures (milliseconds and ratios).
     *
     * @param missOverhead  the median over the runs of miss / cold for the same prompt, back to back
     * @param missAddedMs   what lmcache4j adds before the forward pass on a miss (hashing and lookup), median
     * @param storeOverhead the store after a prefill over the prefill's forward pass, median
     */
    public record Row(int tokens, double coldMs, double missMs, double missOverhead, double missAddedMs, double warmMs,
                      double warmDiskMs, int cachedTokens, double storeOverhead) {
        public double speedup() {
            return coldMs / warmMs;
        }

        public double speedupDisk() {
            return coldMs / warmDiskMs;
        }
    }

    private TtftBench() {
    }

    /** Runs the benchmark; progress lines go to {@code log}. */
    public static List<Row> run(Settings s, AbstractModel model, String modelName, PrintStream log) {
        int context = model.getConfig().contextLength;
        int vocabulary = model.getConfig().vocabularySize;
        for (int length : s.lengths()) {
            if (length < 2 || length >= context) {
                throw new IllegalArgumentException("prompt length " + length + " is outside [2, " + (context - 1)
                        + "] for this model (" + context + " positions)");
            }
        }
        ConfigLoader.Builder config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 1.0).set("hash_seed", "0")
                .set("local_disk", s.disk().toString()).set("max_local_disk_size", 4.0);
        SplittableRandom random = new SplittableRandom(s.seed());
        List<Row> rows = new ArrayList<>();
        try (LMCacheEngine engine = LMCacheEngine.create(config.build(), CachedPrefill.metadata(model, modelName),
                KvConnector.host(1), List.of());
             CachedPrefill prefill = new CachedPrefill(engine, model)) {
            log.println("bench ttft: warming up the JIT (two 1,024-token prefills, plain and cached)");
            for (int i = 0; i < 2; i++) {
                int[] p = random.ints(1_024, 3, vocabulary).toArray();
                close(prefill.prefillWithoutCache(p));
                close(prefill.prefill(p));
                close(prefill.prefill(p));
            }
            for (int length : s.lengths()) {
                int pairs = pairs(s.runs(), length);
                double[] cold = new double[pairs];
                double[] miss = new double[pairs];
                double[] store = new double[pairs];
                double[] ratio = new double[pairs];
                double[] added = new double[pairs];
                int[] last = null;
                for (int r = 0; r < pairs; r++) {
                    int[] prompt = random.ints(length, 3, vocabulary).toArray();
                    // Alternate the order, so a drift of the machine's speed falls on both sides.
                    if (r % 2 == 0) {
                        cold[r] = plain(prefill, prompt);
                    }
                    try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
                        if (p.cachedTokens() != 0) {
                            throw new IllegalStateException("a fresh prompt found " + p.cachedTokens() + " cached tokens");
                        }
                        miss[r] = p.timeToFirstTokenNanos() / 1e6;
                        added[r] = (p.timeToFirstTokenNanos() - p.computeNanos()) / 1e6;
                        store[r] = (double) p.storeNanos() / p.computeNanos();
                    }
                    // The store's disk writes finish before anything else is timed.
                    TierWait.untilHeld(engine, prompt, LocalDiskBackend.NAME);
                    if (r % 2 == 1) {
                        cold[r] = plain(prefill, prompt);
                    }
                    ratio[r] = miss[r] / cold[r];
                    log.printf("bench ttft: %,d tokens, run %d: cold %.0f ms, through lmcache4j (miss) %.0f ms (%.4f; "
                            + "lmcache4j's share %.2f ms)%n", length, r + 1, cold[r], miss[r], ratio[r], added[r]);
                    last = prompt;
                }
                Warm warm = warm(engine, prefill, last);
                Row row = new Row(length, median(cold), median(miss), median(ratio), median(added), warm.cpuMs(),
                        warm.diskMs(), warm.cachedTokens(), median(store));
                log.printf("bench ttft: %,d tokens: warm %.1f ms (CPU), %.1f ms (disk); speedup %.1fx%n", length,
                        row.warmMs(), row.warmDiskMs(), row.speedup());
                rows.add(row);
            }
        }
        return rows;
    }

    /** A cached prompt's time to first token from the CPU tier and from the disk tier (medians), and the tokens found. */
    private record Warm(double cpuMs, double diskMs, int cachedTokens) {
    }

    private static Warm warm(LMCacheEngine engine, CachedPrefill prefill, int[] prompt) {
        double[] cpu = new double[3];
        int cached = 0;
        for (int i = 0; i < cpu.length; i++) {
            try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
                cpu[i] = p.timeToFirstTokenNanos() / 1e6;
                cached = p.cachedTokens();
            }
        }
        TierWait.untilHeld(engine, prompt, LocalDiskBackend.NAME);
        double[] disk = new double[2];
        for (int i = 0; i < disk.length; i++) {
            TierWait.emptyCpuTier(engine);
            try (CachedPrefill.Prefill p = prefill.prefill(prompt)) {
                disk[i] = p.timeToFirstTokenNanos() / 1e6;
                if (p.cachedTokens() != cached) {
                    throw new IllegalStateException("from disk " + p.cachedTokens() + " tokens came back, from the CPU tier "
                            + cached);
                }
            }
        }
        return new Warm(median(cpu), median(disk), cached);
    }

    /** The miss overhead over every length: the time-weighted mean of each length's median ratio. */
    public static double missOverhead(List<Row> rows) {
        double weighted = 0;
        double cold = 0;
        for (Row r : rows) {
            weighted += r.missOverhead() * r.coldMs();
            cold += r.coldMs();
        }
        return weighted / cold;
    }

    /**
     * Cold and miss pairs for a length: {@code runs}, scaled up for short prompts (as many pairs as
     * fit the time of {@code runs} pairs of 8,192 tokens, at most 16), whose run-to-run spread on a
     * busy 2-core machine is larger than the 1 % being measured.
     */
    static int pairs(int runs, int length) {
        return Math.max(runs, Math.min(16, runs * Math.max(1, 8_192 / length)));
    }

    private static double plain(CachedPrefill prefill, int[] prompt) {
        try (CachedPrefill.Prefill p = prefill.prefillWithoutCache(prompt)) {
            return p.timeToFirstTokenNanos() / 1e6;
        }
    }

    private static void close(CachedPrefill.Prefill p) {
        p.close();
    }

    static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
}
