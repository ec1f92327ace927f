package lmcache4j.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import lmcache4j.allocator.host.HostArenas;
import lmcache4j.bench.allocator.AllocationTrace;
import lmcache4j.bench.allocator.AllocatorBench;
import lmcache4j.bench.allocator.AllocatorBench.Report;
import lmcache4j.bench.allocator.AllocatorBench.Result;
import lmcache4j.bench.allocator.BenchedAllocator;
import lmcache4j.bench.allocator.BenchedAllocator.Kind;
import lmcache4j.bench.json.ReportJson;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Unmatched;

/**
 * {@code ./lmcache4j bench allocator [--json] [--runs N] [--ops N] [--seed N] ...}: the allocator
 * benchmark ({@link AllocatorBench}) as a table, or as one JSON object with {@code --json}.
 * Progress goes to stderr, the result to stdout. Exit status 2 for a usage error, 1 when the
 * benchmark itself fails (for example an allocator reports a leak on close).
 *
 * <p>{@code ./lmcache4j bench jmh ...} is handled by the launcher, which runs JMH's own main.
 */
@Command(name = "bench", description = {"The benchmarks; ./lmcache4j bench BENCHMARK --help for the options of each."},
        footer = {"%n./lmcache4j bench jmh [JMH args...] runs the JMH benchmarks (for example: AllocatorJmh -f 1 -wi 1 -i 2)."})
public final class BenchCommand implements CliMain.Command {
    private final PrintStream err;

    private BenchCommand(PrintStream err) {
        this.err = err;
    }

    public static void main(String[] args) {
        CliMain.exit("bench", () -> run(args, System.out, System.err));
    }

    /** Runs {@code bench <benchmark> [options]}; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        CommandLine bench = new CommandLine(new BenchCommand(err))
                .addSubcommand(new Allocator(out, err))
                .addSubcommand(new HashBenchCommand(out, err))
                .addSubcommand(new StoreBenchCommand(out, err))
                .addSubcommand(new ConcurrentBenchCommand(out, err))
                .addSubcommand(new DiskBenchCommand(out, err))
                .addSubcommand(new RedisBenchCommand(out, err))
                .addSubcommand(new S3BenchCommand(out, err))
                .addSubcommand(new P2pBenchCommand(out, err))
                .addSubcommand(new MpBenchCommand(out, err))
                .addSubcommand(new ControllerBenchCommand(out, err))
                .addSubcommand(new ZmqBenchCommand(out, err))
                .addSubcommand(new TtftBenchCommand(out, err))
                .addSubcommand(new BlendBenchCommand(out, err))
                .addSubcommand(new PdBenchCommand(out, err))
                .addSubcommand(new TraceBenchCommand(out, err))
                .addSubcommand(new Jmh(err))
                .addSubcommand(new CommandLine.HelpCommand());
        return CliMain.execute(bench, out, err, args);
    }

    /** Runs {@code bench <benchmark> [args]}. */
    static int run(String benchmark, String[] args, PrintStream out, PrintStream err) {
        return run(Stream.concat(Stream.of(benchmark), Arrays.stream(args)).toArray(String[]::new), out, err);
    }

    /** Runs {@code bench allocator} with these arguments (those after {@code allocator}). */
    static int allocator(String[] args, PrintStream out, PrintStream err) {
        return run("allocator", args, out, err);
    }

    @Override
    public Integer call() {
        return CliMain.usageError(err, "bench", "bench needs a benchmark: allocator, hash, store, concurrent, disk, redis, s3, controller, p2p, mp, zmq, ttft, blend, trace, pd or jmh");
    }

    @Override
    public String unmatched(String arg) {
        return "unknown benchmark '" + CliText.echo(arg) + "'; valid: allocator, hash, store, concurrent, disk, redis, s3, controller, p2p, mp, ttft, blend, trace, pd, jmh";
    }

    /** {@code bench jmh}: the launcher runs JMH's own main; here it only says so. */
    @Command(name = "jmh", description = "the JMH benchmarks: ./lmcache4j bench jmh [JMH args...]")
    private static final class Jmh implements CliMain.Command {
        private final PrintStream err;

        @Unmatched
        private List<String> jmhArgs;

        Jmh(PrintStream err) {
            this.err = err;
        }

        @Override
        public Integer call() {
            err.println("lmcache4j bench: run JMH through the launcher: ./lmcache4j bench jmh [JMH args...]");
            return 2;
        }
    }

    /**
     * {@code bench allocator}: the allocator benchmark ({@link AllocatorBench}) as a table, or as one
     * JSON object with {@code --json}.
     */
    @Command(name = "allocator", description = {"allocate+free ns of lmcache4j's allocators against Netty's and malloc.",
                    "Replays one seeded trace of KV-chunk requests (full 256-token chunks of a few model shapes and "
                    + "partial last chunks, shuffled frees, ~80%% pool occupancy) against TensorMemoryAllocator, "
                    + "PagedTensorMemoryAllocator, Netty's pooled direct allocator and malloc/free through FFM; prints the "
                    + "median ns per allocate+free pair, the targets (tensor <= 200 ns, paged <= 50 ns) and the tensor "
                    + "allocator's fragmentation."})
    private static final class Allocator implements CliMain.Command {
        private final PrintStream out;
        private final PrintStream err;

        @Option(names = "--json", order = 0, description = "print one JSON object instead of the table")
        private boolean json;

        @Mixin
        private BenchRuns counts = new BenchRuns(AllocatorBench.Settings.DEFAULT_RUNS,
                AllocatorBench.Settings.DEFAULT_WARMUP);
        private int ops = AllocationTrace.Config.DEFAULT_STEADY_PAIRS;
        private long seed = AllocationTrace.Config.DEFAULT_SEED;
        private long poolMib = AllocationTrace.Config.DEFAULT_POOL_BYTES >> 20;
        private List<Kind> only = List.of(Kind.values());

        Allocator(PrintStream out, PrintStream err) {
            this.out = out;
            this.err = err;
        }



        @Option(names = "--ops", paramLabel = "N", order = 3, description = "allocate+free pairs in the steady phase of the "
                + "trace (default " + AllocationTrace.Config.DEFAULT_STEADY_PAIRS + ")")
        private void ops(String value) {
            ops = (int) OptionValues.wholeNumber("--ops", value, 1, 100_000_000);
        }

        @Option(names = "--seed", paramLabel = "N", order = 4,
                description = "the trace's random seed (default " + AllocationTrace.Config.DEFAULT_SEED + ")")
        private void seed(String value) {
            seed = OptionValues.wholeNumber("--seed", value, Long.MIN_VALUE, Long.MAX_VALUE);
        }

        @Option(names = "--pool-mib", paramLabel = "N", order = 5, description = "the simulated pool in MiB (default "
                + (AllocationTrace.Config.DEFAULT_POOL_BYTES >> 20) + "): the tensor allocator's, of untouched virtual memory; "
                + "the paged pool holds the peak live count / occupancy in pages; Netty and malloc touch about occupancy x "
                + "pool of real memory")
        private void poolMib(String value) {
            poolMib = OptionValues.wholeNumber("--pool-mib", value, 256, 1L << 30);
        }

        @Option(names = "--only", paramLabel = "LIST", order = 6,
                description = "comma-separated subset of tensor, paged, netty, malloc (default: all)")
        private void only(String value) {
            List<Kind> kinds = new ArrayList<>();
            for (String key : value.split(",")) {
                try {
                    Kind k = Kind.fromKey(key.strip());
                    if (!kinds.contains(k)) {
                        kinds.add(k);
                    }
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("--only: " + e.getMessage());
                }
            }
            only = kinds;
        }

        @Override
        public Integer call() {
            AllocationTrace.Config trace = AllocationTrace.Config.of(seed, ops).withPoolBytes(poolMib << 20);
            Report report;
            try {
                report = AllocatorBench.run(new AllocatorBench.Settings(trace, counts.runs(), counts.warmup(), only), err);
            } catch (RuntimeException e) {
                err.println("lmcache4j bench: the allocator benchmark failed: " + CliText.oneLine(e));
                return 1;
            }
            if (json) {
                out.println(json(report));
            } else {
                printTable(report, out);
            }
            return 0;
        }
    }

    // ---- output -------------------------------------------------------------------------------

    static void printTable(Report report, PrintStream out) {
        AllocationTrace trace = report.trace();
        AllocationTrace.Config c = trace.config();
        AllocatorBench.Settings s = report.settings();
        out.println("== lmcache4j allocator benchmark ==");
        out.printf(Locale.ROOT, "trace     seed %d: %,d allocate+free pairs per replay, %,d of them in the steady phase "
                        + "at %.0f%% occupancy of a %s pool%n", c.seed(), trace.pairs(), trace.steadyPairs(),
                100 * c.occupancy(), HostArenas.formatBytes(c.poolBytes()));
        out.printf(Locale.ROOT, "          %s %s chunks of %s; %.0f%% partial last chunks (1..255 tokens); "
                        + "mean request %.2f MiB; %,d live at steady start, at most %,d%n",
                AllocationTrace.FORMAT, AllocationTrace.DTYPE.torchName(), models(), 100.0 * trace.partialRequests() / trace.pairs(),
                trace.meanRequestBytes() / (1 << 20), trace.liveAtSteadyStart(), trace.maxLive());
        out.printf(Locale.ROOT, "method    steady phase timed in %d pieces (statistics read between them, untimed); "
                + "median of %d runs after %d warmup%n", AllocatorBench.STEADY_PIECES, s.runs(), s.warmup());
        out.printf(Locale.ROOT, "machine   %d cores, JDK %s, lmcache4j leak detection %s%n",
                Runtime.getRuntime().availableProcessors(), Runtime.version(), leakDetection());
        out.println();
        Optional<Result> malloc = report.result(Kind.MALLOC);
        String header = String.format(Locale.ROOT, "%-28s %10s %8s %8s %9s %9s %7s %6s %9s %9s %13s",
                "allocator", "median ns", "min", "max", "whole ns", "vs malloc", "target", "result", "frag max",
                "frag end", "largest free");
        out.println(header);
        out.println("-".repeat(header.length()));
        for (Result r : report.results()) {
            out.printf(Locale.ROOT, "%-28s %10.1f %8.1f %8.1f %9.1f %9s %7s %6s %9s %9s %13s%n",
                    r.kind().displayName(), r.median(), r.min(), r.max(), r.wholeMedian(),
                    malloc.map(m -> String.format(Locale.ROOT, "%.2fx", r.median() / m.median())).orElse("-"),
                    r.kind().targetNs().isPresent() ? "<= " + r.kind().targetNs().getAsInt() : "-",
                    r.kind().targetNs().isPresent() ? (r.meetsTarget() ? "met" : "missed") : "-",
                    r.fragmentsMax() >= 0 ? String.format(Locale.ROOT, "%,d", r.fragmentsMax()) : "-",
                    r.fragmentsEnd() >= 0 ? String.format(Locale.ROOT, "%,d", r.fragmentsEnd()) : "-",
                    r.largestFreeEnd() >= 0 ? HostArenas.formatBytes(r.largestFreeEnd()) : "-");
        }
        out.println();
        out.println("median/min/max: ns per allocate+free pair in the steady phase over the runs; whole ns: median over");
        out.println("  the whole replay (fill, steady phase, drain). vs malloc: median / malloc's median.");
        out.printf(Locale.ROOT, "frag max: most free blocks (free pages for paged) read by stats() at %d points of the steady%n",
                AllocatorBench.STEADY_PIECES);
        out.printf(Locale.ROOT, "  phase, all runs (the trace's own first-fit simulation peaks at %,d, read after every free);%n",
                trace.maxFreeBlocks());
        out.println("  frag end, largest free: at the end of the steady phase (before the drain), last run.");
        for (Result r : report.results()) {
            out.printf(Locale.ROOT, "%-7s %s%s%s%n", r.kind().key() + ":", r.description(),
                    r.footprintBytes() >= 0 ? "; holds " + HostArenas.formatBytes(r.footprintBytes()) + " at steady end" : "",
                    r.notes().isEmpty() ? "" : "; " + r.notes());
        }
    }

    private static String models() {
        return AllocationTrace.MODELS.stream()
                .map(m -> m.name() + " " + m.fullChunk() + " " + HostArenas.formatBytes(m.fullChunk().byteSize(AllocationTrace.DTYPE)))
                .collect(Collectors.joining(", "));
    }

    private static String leakDetection() {
        return System.getProperty("lmcache4j.leakDetection", "sampled");
    }

    static String json(Report report) {
        AllocationTrace trace = report.trace();
        AllocationTrace.Config c = trace.config();
        ReportJson j = new ReportJson();
        for (Kind k : Kind.values()) {
            j.number(k.key() + "_ns_per_pair", report.result(k).map(Result::median), 3);
        }
        Optional<Result> tensor = report.result(Kind.TENSOR);
        j.integer("fragments_max", tensor.map(Result::fragmentsMax));
        j.integer("fragments_end", tensor.map(Result::fragmentsEnd));
        j.integer("fragments_max_simulated", Optional.of((long) trace.maxFreeBlocks()));
        j.integer("largest_free_block_end_bytes", tensor.map(Result::largestFreeEnd));
        j.number("occupancy_end", tensor.map(Result::occupancyEnd), 3);
        for (Kind k : Kind.values()) {
            if (k.targetNs().isPresent()) {
                j.integer(k.key() + "_target_ns", Optional.of((long) k.targetNs().getAsInt()));
                j.bool(k.key() + "_meets_target", report.result(k).map(Result::meetsTarget));
            }
        }
        report.result(Kind.MALLOC).ifPresent(m -> {
            for (Result r : report.results()) {
                if (r.kind() != Kind.MALLOC) {
                    j.number(r.kind().key() + "_vs_malloc", Optional.of(r.median() / m.median()), 3);
                }
            }
        });
        j.integer("runs", Optional.of((long) report.settings().runs()));
        j.integer("warmup", Optional.of((long) report.settings().warmup()));
        j.integer("ops", Optional.of((long) c.steadyPairs()));
        j.integer("seed", Optional.of(c.seed()));
        j.integer("pairs_per_run", Optional.of(trace.pairs()));
        j.integer("steady_pairs_per_run", Optional.of(trace.steadyPairs()));
        j.integer("pool_bytes", Optional.of(c.poolBytes()));
        j.number("occupancy_target", Optional.of(c.occupancy()), 3);
        j.number("partial_fraction", Optional.of((double) trace.partialRequests() / trace.pairs()), 3);
        j.number("mean_request_bytes", Optional.of(trace.meanRequestBytes()), 3);
        j.integer("live_at_steady_start", Optional.of((long) trace.liveAtSteadyStart()));
        j.integer("max_live", Optional.of((long) trace.maxLive()));
        j.string("models", models());
        j.integer("cores", Optional.of((long) Runtime.getRuntime().availableProcessors()));
        j.string("jdk", Runtime.version().toString());
        j.string("leak_detection", leakDetection());
        j.string("netty_version", BenchedAllocator.Netty.nettyVersion());
        j.string("method", "*_ns_per_pair: median over runs of (steady-phase nanoTime / its allocate+free pairs), "
                + "the steady phase timed in " + AllocatorBench.STEADY_PIECES + " pieces; fragments_max: max "
                + "stats().fragmentCount() of TensorMemoryAllocator read between the pieces (untimed) over all measured "
                + "runs; fragments_max_simulated: the trace's first-fit simulation, read after every free; "
                + "*_end: at the end of the steady phase, before the drain");
        ReportJson allocators = new ReportJson();
        for (Result r : report.results()) {
            ReportJson a = new ReportJson();
            a.string("name", r.kind().displayName());
            a.string("description", r.description());
            a.number("median_ns_per_pair", Optional.of(r.median()), 3);
            a.number("min_ns_per_pair", Optional.of(r.min()), 3);
            a.number("max_ns_per_pair", Optional.of(r.max()), 3);
            a.number("whole_median_ns_per_pair", Optional.of(r.wholeMedian()), 3);
            a.numbers("runs_ns_per_pair", r.nsPerPair(), 3);
            a.numbers("runs_whole_ns_per_pair", r.wholeNsPerPair(), 3);
            a.integer("fragments_max", present(r.fragmentsMax()));
            a.integer("fragments_end", present(r.fragmentsEnd()));
            a.integer("largest_free_block_end_bytes", present(r.largestFreeEnd()));
            a.number("occupancy_end", Double.isNaN(r.occupancyEnd()) ? Optional.empty() : Optional.of(r.occupancyEnd()), 3);
            a.integer("footprint_bytes_end", present(r.footprintBytes()));
            if (!r.notes().isEmpty()) {
                a.string("notes", r.notes());
            }
            allocators.object(r.kind().key(), a);
        }
        j.object("allocators", allocators);
        return j.toString();
    }

    private static Optional<Long> present(long value) {
        return value >= 0 ? Optional.of(value) : Optional.empty();
    }

}
