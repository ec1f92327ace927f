package lmcache4j.bench.pd;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.bench.model.ModelSource;
import lmcache4j.jlama.CachedPrefill;

/**
 * {@code ./lmcache4j bench pd}: disaggregated prefill's figures, each against its limit measured in
 * the same run.
 * <ul>
 *   <li><b>Time to first token</b> per prompt length: through PD (proxy, prefiller, decoder: three
 *       processes; from the proxy's receipt to the decoder's first token) against one colocated
 *       process doing prefill and decode ({@code ttft_pd_vs_local}); the positions the decoder
 *       computed ({@code decoder_prefill_positions}).</li>
 *   <li><b>The transfer alone</b> ({@link PdTransferBench}): GB/s against a bare loopback stream of
 *       the same bytes, and tagged against untagged.</li>
 *   <li><b>Interference</b>: while long prompts keep arriving, the inter-token latency (p50, p99) of
 *       requests decoding, colocated (one process doing both) against disaggregated (prefiller and
 *       decoder pinned to different CPUs with {@code taskset} where it works).</li>
 * </ul>
 */
public final class PdBench {
    /**
     * @param lengths          prompt lengths of the TTFT figure
     * @param runs             prompts per length
     * @param seed             the prompts' seed
     * @param transferChunks   chunks per transfer run
     * @param transferRuns     timed transfer runs (after untimed ones of {@link PdTransferBench#WARMUP_CHUNKS} chunks)
     * @param interference     how long each interference mode runs
     * @param decodeStreams    requests decoding at once during it
     * @param decodeTokens     tokens each of them generates
     * @param longPrompt       the length of the prompts that keep arriving
     */
    public record Settings(int[] lengths, int runs, long seed, int transferChunks, int transferRuns, Duration interference,
                           int decodeStreams,
                           int decodeTokens, int longPrompt) {
        public static final int[] DEFAULT_LENGTHS = {1_024, 4_096, 8_192};

        public Settings {
            lengths = lengths.clone();
            if (lengths.length == 0 || runs < 1 || transferChunks < 1 || transferRuns < 1 || decodeStreams < 1 || decodeTokens < 2) {
                throw new IllegalArgumentException("at least one length, one run, one chunk, one transfer run, one stream and two "
                        + "tokens");
            }
        }

        /**
         * The defaults: 1,024, 4,096 and 8,192 tokens, 2 runs, 64 chunks in 15 transfer runs (a run lasts some 20 ms: the
         * medians of 5 scattered from 0.48 to 0.75 of the bare stream between invocations), 20 s per mode, 2 streams of 32
         * tokens, 4,096-token prompts.
         */
        public static Settings defaults() {
            return new Settings(DEFAULT_LENGTHS, 2, 1, 64, 15, Duration.ofSeconds(20), 2, 32, 4_096);
        }

        /** With {@code chunks} chunks in each of {@code runs} timed transfer runs. */
        public Settings withTransfer(int chunks, int runs) {
            return new Settings(lengths, this.runs, seed, chunks, runs, interference, decodeStreams, decodeTokens, longPrompt);
        }
    }

    /** One prompt length: medians over the runs. */
    public record TtftRow(int tokens, double pdMs, double localMs, double ratio, int decoderPrefillPositions,
                          double pushWaitMs) {
    }

    /** Inter-token latencies of one mode. */
    public record Itl(double p50Ms, double p99Ms, int samples, int decodeRequests, int longPrompts) {
    }

    /** Every figure, with what the machine was doing. */
    public record Result(List<TtftRow> ttft, PdTransferBench.Result transfer, Itl colocated, Itl disaggregated,
                         String cpu, int cpus, Optional<String> pinning, double loadBefore, double loadAfter) {
    }

    private PdBench() {
    }

    /** Runs every part; progress lines go to {@code log}. {@code model} is this process's copy (its shape). */
    public static Result run(Settings s, ModelSource source, AbstractModel model, Path dir, PrintStream log)
            throws IOException {
        int context = model.getConfig().contextLength;
        for (int length : s.lengths()) {
            if (length < 2 || length + s.decodeTokens() >= context) {
                throw new IllegalArgumentException("prompt length " + length + " is outside [2, " + (context - 1
                        - s.decodeTokens()) + "] for this model (" + context + " positions)");
            }
        }
        double loadBefore = loadAverage();
        log.println("bench pd: the transfer alone (one process, loopback)");
        PdTransferBench.Result transfer = transferOnly(s, source, model, log);
        int vocabulary = model.getConfig().vocabularySize;
        SplittableRandom random = new SplittableRandom(s.seed());
        List<TtftRow> rows = new ArrayList<>();
        Path ttftLogs = Files.createDirectories(dir.resolve("ttft"));
        log.println("bench pd: starting a proxy, a prefiller, a decoder and a colocated worker (unpinned)");
        try (PdCluster c = PdCluster.start(new PdCluster.Options(source, 1, 1, true, 512L << 20, 30_000, Optional.empty(),
                Optional.empty(), Optional.empty(), ttftLogs))) {
            warmUp(c, random, vocabulary);
            for (int length : s.lengths()) {
                rows.add(ttft(c, s, length, random, vocabulary, log));
            }
        }
        Optional<String> pinning = Pinning.available();
        Path itlLogs = Files.createDirectories(dir.resolve("interference"));
        log.println("bench pd: interference: " + pinning.map(p -> "prefiller on CPU 0, decoder on CPU 1, colocated on 0-1 ("
                + p + ")").orElse("taskset is not usable here: nothing pinned"));
        Itl colocated;
        Itl disaggregated;
        try (PdCluster c = PdCluster.start(new PdCluster.Options(source, 1, 1, true, 512L << 20, 30_000,
                pinning.map(p -> "0"), pinning.map(p -> "1"), pinning.map(p -> "0,1"), itlLogs))) {
            warmUp(c, random, vocabulary);
            colocated = interference(c, c.colocatedUrl().orElseThrow(), s, random, vocabulary, "colocated", log);
            disaggregated = interference(c, c.proxyUrl(), s, random, vocabulary, "disaggregated", log);
        }
        return new Result(rows, transfer, colocated, disaggregated, Pinning.cpuModel(), Runtime.getRuntime().availableProcessors(),
                pinning, loadBefore, loadAverage());
    }

    /** The transfer part alone ({@code bench pd --transfer-only}): no other process is started. */
    public static PdTransferBench.Result transferOnly(Settings s, ModelSource source, AbstractModel model, PrintStream log)
            throws IOException {
        return PdTransferBench.run(CachedPrefill.metadata(model, source.name()), s.transferChunks(), s.transferRuns(), log);
    }

    /** Every process's JIT warmed on the work it does (the decoder also on whole prefills, as {@link PdDemo} explains). */
    private static void warmUp(PdCluster c, SplittableRandom random, int vocabulary) {
        for (int i = 0; i < 3; i++) {
            int[] p = random.ints(1_024, 3, vocabulary).toArray();
            c.post(c.decoderUrls().getFirst(), "/decode", PdCluster.generate(p, 4, false));
            c.post(c.proxyUrl(), "/generate", PdCluster.generate(p, 4, false));
            c.colocatedUrl().ifPresent(u -> c.post(u, "/generate", PdCluster.generate(p, 4, false)));
        }
    }

    private static TtftRow ttft(PdCluster c, Settings s, int length, SplittableRandom random, int vocabulary, PrintStream log) {
        double[] pd = new double[s.runs()];
        double[] local = new double[s.runs()];
        double[] wait = new double[s.runs()];
        int positions = 0;
        for (int r = 0; r < s.runs(); r++) {
            int[] prompt = random.ints(length, 3, vocabulary).toArray();
            // Alternate the order, so a drift of the machine's speed falls on both sides.
            if (r % 2 == 1) {
                local[r] = local(c, prompt);
            }
            Map<String, Object> answer = c.post(c.proxyUrl(), "/generate", PdCluster.generate(prompt, 2, false));
            pd[r] = number(answer, "timings_ms", "ttft");
            wait[r] = number(answer, "prefill", "push_wait_ms");
            positions = Math.max(positions, (int) number(answer, "decode", "prefill_positions"));
            if (r % 2 == 0) {
                local[r] = local(c, prompt);
            }
            log.printf("bench pd: %,d tokens, run %d: first token through PD %.0f ms, one process %.0f ms (%.3f); the decoder "
                    + "computed %d position(s)%n", length, r + 1, pd[r], local[r], pd[r] / local[r], positions);
        }
        double p = PdTransferBench.median(pd);
        double l = PdTransferBench.median(local);
        return new TtftRow(length, p, l, p / l, positions, PdTransferBench.median(wait));
    }

    private static double local(PdCluster c, int[] prompt) {
        return ((Number) c.post(c.colocatedUrl().orElseThrow(), "/generate", PdCluster.generate(prompt, 2, false))
                .get("ttft_ms")).doubleValue();
    }

    @SuppressWarnings("unchecked")
    private static double number(Map<String, Object> answer, String object, String field) {
        return ((Number) ((Map<String, Object>) answer.get(object)).get(field)).doubleValue();
    }

    /**
     * {@code decodeStreams} requests decoding back to back and one stream of long prompts, all sent to
     * {@code url} for the mode's time; the inter-token latencies of the decoding requests.
     */
    private static Itl interference(PdCluster c, String url, Settings s, SplittableRandom random, int vocabulary, String mode,
                                    PrintStream log) {
        long end = System.nanoTime() + s.interference().toNanos();
        ConcurrentLinkedQueue<Double> gaps = new ConcurrentLinkedQueue<>();
        AtomicInteger decodes = new AtomicInteger();
        AtomicInteger longs = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        long seed = random.nextLong();
        for (int i = 0; i < s.decodeStreams(); i++) {
            SplittableRandom r = new SplittableRandom(seed + i);
            threads.add(Thread.ofVirtual().start(() -> {
                while (System.nanoTime() < end) {
                    Map<String, Object> answer = c.post(url, "/generate", PdCluster.generate(r.ints(256, 3, vocabulary)
                            .toArray(), s.decodeTokens(), false));
                    double[] times = tokenTimes(answer);
                    for (int t = 1; t < times.length; t++) {
                        gaps.add(times[t] - times[t - 1]);
                    }
                    decodes.incrementAndGet();
                }
            }));
        }
        SplittableRandom r = new SplittableRandom(seed - 1);
        threads.add(Thread.ofVirtual().start(() -> {
            while (System.nanoTime() < end) {
                c.post(url, "/generate", PdCluster.generate(r.ints(s.longPrompt(), 3, vocabulary).toArray(), 1, false));
                longs.incrementAndGet();
            }
        }));
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        double[] sorted = gaps.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (sorted.length == 0) {
            throw new IllegalStateException("no decode step was timed in " + s.interference().toSeconds() + " s (" + mode + ")");
        }
        Itl itl = new Itl(percentile(sorted, 50), percentile(sorted, 99), sorted.length, decodes.get(), longs.get());
        log.printf("bench pd: %s: inter-token latency p50 %.1f ms, p99 %.1f ms over %d steps of %d requests, while %d prompts "
                + "of %,d tokens arrived%n", mode, itl.p50Ms(), itl.p99Ms(), itl.samples(), itl.decodeRequests(),
                itl.longPrompts(), s.longPrompt());
        return itl;
    }

    @SuppressWarnings("unchecked")
    private static double[] tokenTimes(Map<String, Object> answer) {
        Object decode = answer.containsKey("decode") ? ((Map<String, Object>) answer.get("decode")).get("token_times_ms")
                : answer.get("token_times_ms");
        return ((List<Object>) decode).stream().mapToDouble(o -> ((Number) o).doubleValue()).toArray();
    }

    static double percentile(double[] sorted, double p) {
        int i = (int) Math.ceil(p / 100 * sorted.length) - 1;
        return sorted[Math.clamp(i, 0, sorted.length - 1)];
    }

    /** The 1-minute load average, or NaN where the system does not tell. */
    public static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }
}
