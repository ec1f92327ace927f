package lmcache4j.cli;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import lmcache4j.bench.concurrent.ConcurrentBench.Result;
import lmcache4j.bench.concurrent.ConcurrentBench.Settings;
import lmcache4j.bench.concurrent.ConcurrentBench.Step;
import lmcache4j.bench.concurrent.ConcurrentBench;
import lmcache4j.bench.json.ReportJson;
import lmcache4j.engine.connector.KvConnector;

/**
 * {@code ./lmcache4j bench concurrent [--json] [--threads 1,2,4,8,16] [--millis N] [--warmup-millis N]
 * [--copy-threads N]}: one engine's throughput under N concurrent request threads
 * ({@link ConcurrentBench}) with the CPU tier lock's wait and hold times, as a table or one JSON
 * object; {@link BenchCommand} dispatches here. Progress goes to stderr, the result to stdout; exit
 * status 2 for a usage error, 1 when the benchmark fails or a retrieve loaded wrong bytes.
 */
@Command(name = "concurrent", description = {"one engine's ops/s under N concurrent lookup -> retrieve -> store requests.",
        "N threads (default 1, 2, 4, 8, 16: more than the cores on purpose) each repeat one request against one engine: "
        + "lookup (pinning), retrieve into the thread's own slots of one paged cache, store. A request is 2 chunks every "
        + "thread shares, 1 chunk of its own and 1 fresh chunk (small model: 4 layers, 4 KV heads x 64, bf16, 1 MiB per "
        + "chunk), so every operation hits 3 chunks and stores 1, evicting old fresh chunks by LRU. Reports ops/s per N, "
        + "scaling_2_vs_1, and the CPU tier lock's hold and wait times from the engine's metrics."})
public final class ConcurrentBenchCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object (threads, ops_per_s, scaling_2_vs_1, "
            + "lock_wait_us_per_op, lock_hold_us_per_op, ...) instead of the table")
    private boolean json;

    private int[] threads = Settings.DEFAULT_THREAD_COUNTS;
    private long millis = Settings.DEFAULT_MILLIS;
    private long warmupMillis = Settings.DEFAULT_WARMUP_MILLIS;
    private int copyThreads = KvConnector.machineCopyThreads();

    ConcurrentBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--threads", paramLabel = "N,N,...", order = 1, description = "request threads to measure, in order "
            + "(default 1,2,4,8,16; each from 1 to 1024)")
    private void threads(String value) {
        String[] parts = value.split(",", -1);
        int[] counts = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            counts[i] = OptionValues.intInRange("--threads", parts[i].strip(), 1, 1024);
        }
        threads = counts;
    }

    @Option(names = "--millis", paramLabel = "N", order = 2, description = "measured milliseconds at each N (default "
            + Settings.DEFAULT_MILLIS + ")")
    private void millis(String value) {
        millis = OptionValues.intInRange("--millis", value, 1, 600_000);
    }

    @Option(names = "--warmup-millis", paramLabel = "N", order = 3, description = "unmeasured milliseconds at each N first "
            + "(default " + Settings.DEFAULT_WARMUP_MILLIS + ")")
    private void warmupMillis(String value) {
        warmupMillis = OptionValues.intInRange("--warmup-millis", value, 0, 600_000);
    }

    @Option(names = "--copy-threads", paramLabel = "N", order = 4, description = "the engine's copy_threads (default: the "
            + "machine's cores, at most " + KvConnector.MAX_DEFAULT_COPY_THREADS + ")")
    private void copyThreads(String value) {
        copyThreads = OptionValues.intInRange("--copy-threads", value, 1, 1024);
    }

    @Option(names = "--no-streaming-stores", order = 5, description = "write the engine's copies with ordinary cached "
            + "stores (copy_streaming_stores: false) instead of the streaming stores the machine offers")
    private boolean noStreamingStores;

    /** Runs {@code bench concurrent} with these arguments (those after {@code concurrent}); returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("concurrent", args, out, err);
    }

    @Override
    public Integer call() {
        Result r;
        try {
            r = ConcurrentBench.run(Settings.defaults(copyThreads).withThreadCounts(threads).withTime(warmupMillis, millis)
                    .withStreamingStores(!noStreamingStores), err);
        } catch (RuntimeException e) {
            return CliMain.failure(err, "bench concurrent", "the benchmark failed", e);
        }
        out.println(json ? json(r) : table(r));
        if (r.mismatches() != 0) {
            err.println("lmcache4j bench concurrent: FAILED: " + r.mismatches() + " retrieved bytes differ from the stored KV");
            return 1;
        }
        return 0;
    }

    private static double[] each(Result r, ToDoubleFunction<Step> f) {
        return r.steps().stream().mapToDouble(f).toArray();
    }

    static String json(Result r) {
        Settings s = r.settings();
        return new ReportJson()
                .numbers("threads", each(r, Step::threads), 0)
                .numbers("ops_per_s", each(r, Step::opsPerSecond), 1)
                .number("scaling_2_vs_1", r.scaling(2, 1), 3)
                .numbers("lock_hold_us_per_op", each(r, Step::lockHoldMicrosPerOp), 3)
                .numbers("lock_wait_us_per_op", each(r, Step::lockWaitMicrosPerOp), 3)
                .numbers("lock_busy_fraction", each(r, Step::lockBusyFraction), 4)
                .numbers("lock_wait_fraction", each(r, Step::lockWaitFraction), 4)
                .numbers("lock_contended_fraction", each(r, Step::lockContendedFraction), 4)
                .numbers("lock_acquisitions_per_op", each(r, st -> st.ops() == 0 ? 0 : st.lockAcquisitions() / (double) st.ops()), 2)
                .numbers("hit_rate", each(r, Step::hitRate), 4)
                .numbers("ops", each(r, Step::ops), 0)
                .integer("verified_bytes", r.verifiedBytes())
                .integer("mismatches", r.mismatches())
                .integer("copy_threads", r.copyThreads())
                .string("copy_streaming_stores", r.streamingStores())
                .integer("chunk_bytes", s.chunkBytes())
                .integer("chunk_size", s.chunkSize())
                .integer("shared_chunks", s.sharedChunks())
                .integer("distinct_chunks", s.distinctChunks())
                .integer("cpu_tier_chunks", s.cpuTierChunks())
                .integer("layers", s.layers())
                .integer("kv_heads", s.kvHeads())
                .integer("head_size", s.headSize())
                .integer("millis", s.millis())
                .integer("warmup_millis", s.warmupMillis())
                .integer("cores", Runtime.getRuntime().availableProcessors())
                .string("jdk", Runtime.version().toString())
                .string("method", "N threads each repeat lookup (pinning) -> retrieve -> store of a request of "
                        + s.sharedChunks() + " shared, " + s.distinctChunks() + " own and 1 fresh chunk against one engine; "
                        + "ops_per_s = operations completed in the measured window / its length, after a warmup at each N; "
                        + "lock figures are deltas of the engine's lmcache4j:cpu_tier_lock_* metrics over the window: hold and "
                        + "wait us per op, busy = held time / window, wait = waited time / (N x window)")
                .toString();
    }

    static String table(Result r) {
        Settings s = r.settings();
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "concurrent bench: one engine, N threads each lookup -> retrieve -> store; request = "
                        + "%d shared + %d own + 1 fresh chunk of %d tokens (%d KiB); %d ms per N after %d ms warmup; %d copy "
                        + "thread(s), streaming stores %s, %d cores%n", s.sharedChunks(), s.distinctChunks(), s.chunkSize(),
                s.chunkBytes() >> 10, s.millis(), s.warmupMillis(), r.copyThreads(), r.streamingStores(),
                Runtime.getRuntime().availableProcessors()));
        sb.append(String.format(Locale.ROOT, "  %7s %11s %9s %14s %14s %10s %10s%n", "threads", "ops/s", "vs 1", "lock held us/op",
                "lock wait us/op", "lock busy", "contended"));
        double base = r.steps().getFirst().opsPerSecond();
        for (Step st : r.steps()) {
            sb.append(String.format(Locale.ROOT, "  %7d %11.0f %9.3f %14.3f %14.3f %9.1f%% %9.1f%%%n", st.threads(),
                    st.opsPerSecond(), st.opsPerSecond() / base, st.lockHoldMicrosPerOp(), st.lockWaitMicrosPerOp(),
                    100 * st.lockBusyFraction(), 100 * st.lockContendedFraction()));
        }
        sb.append(String.format(Locale.ROOT, "  scaling_2_vs_1 %.3f; retrieved KV verified: %d bytes, %d mismatching bytes",
                r.scaling(2, 1), r.verifiedBytes(), r.mismatches()));
        return sb.toString();
    }
}
