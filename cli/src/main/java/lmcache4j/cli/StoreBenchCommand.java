package lmcache4j.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import lmcache4j.allocator.host.HostArenas;
import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.store.StoreBench.Result;
import lmcache4j.bench.store.StoreBench.Settings;
import lmcache4j.bench.store.StoreBench;
import lmcache4j.engine.connector.HostCopyRoutine;
import lmcache4j.engine.connector.KvConnector;

/**
 * {@code ./lmcache4j bench store [--json] [--chunks N] [--runs N] [--warmup N] [--copy-threads N]
 * [--copy-routine R[,R...] | --no-streaming-stores]}: the engine's store and retrieve bandwidth
 * against memcpy of the same bytes and the machine's best copy ({@link StoreBench}), as a table or
 * one JSON object; several copy routines run one after another in the same process and are
 * compared. {@link BenchCommand} dispatches here. Progress goes to stderr, the result to stdout;
 * exit status 2 for a usage error, 1 when the benchmark fails or the retrieved KV is wrong.
 */
@Command(name = "store", description = {"the engine's store and retrieve GB/s against MemorySegment.copy of the same bytes.",
                "Store and retrieve of 256-token chunks of a Llama-3-8B-shaped KV (32 layers, 8 KV heads × 128, bf16, "
                + "32 MiB per chunk) between a paged cache in host memory (16-token blocks, shuffled block table) and the "
                + "engine's CPU tier through the host connector, against MemorySegment.copy of the same bytes in the same "
                + "process: the same 32 KiB runs the copy plan moves (the limit the ratios use, target >= "
                + StoreBenchCommand.TARGET_RATIO + "), whole 32 MiB chunks, and one contiguous copy of all the bytes "
                + "(*_vs_chunk_memcpy), and the machine's best copy of the run's bytes: --copy-threads threads, one contiguous "
                + "part each, with the fastest copy routine this machine runs (*_vs_best_copy). The engine copies each chunk on "
                + "--copy-threads threads with --copy-routine. Median of the measured runs, after warmup."})
public final class StoreBenchCommand implements CliMain.Command {
    /** The fraction of memcpy store and retrieve should reach (LMCache reaches about 0.88 of a raw copy). */
    static final double TARGET_RATIO = 0.85;

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object (store_gbps, retrieve_gbps, memcpy_gbps, "
            + "store_vs_memcpy, retrieve_vs_memcpy, ...) instead of the table")
    private boolean json;

    private int chunks = Settings.DEFAULT_CHUNKS;
    @Mixin
    private BenchRuns counts = new BenchRuns(Settings.DEFAULT_RUNS, Settings.DEFAULT_WARMUP);
    private int copyThreads = KvConnector.machineCopyThreads();

    StoreBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--chunks", paramLabel = "N", order = 1, description = "chunks per store and retrieve (default "
            + Settings.DEFAULT_CHUNKS + ", 32 MiB each; memory used is about 5 x chunks x 32 MiB: paged cache twice, CPU tier, "
            + "two memcpy buffers)")
    private void chunks(String value) {
        chunks = OptionValues.intInRange("--chunks", value, 1, 4096);
    }



    @Option(names = "--copy-threads", paramLabel = "N", order = 4, description = "threads, the caller included, that copy "
            + "one chunk (the engine's copy_threads; default: the machine's cores, at most " + KvConnector.MAX_DEFAULT_COPY_THREADS
            + ")")
    private void copyThreads(String value) {
        copyThreads = OptionValues.intInRange("--copy-threads", value, 1, 1024);
    }

    @Option(names = "--no-streaming-stores", order = 5, description = "write the engine's copies with ordinary cached "
            + "stores (copy_streaming_stores: false) instead of the streaming stores the machine offers")
    private boolean noStreamingStores;

    @Option(names = "--copy-routine", paramLabel = "R[,R...]", split = ",", order = 6, description = "the routine the "
            + "engine copies with: streaming (lmcache4j's streaming stores, the default), memcpy (the C library's memcpy "
            + "through FFM; the launcher lowers glibc's non-temporal threshold, GLIBC_TUNABLES, unless set) or "
            + "segment-copy (MemorySegment.copy); several, comma-separated: each runs in turn in this process and a "
            + "comparison follows")
    private List<String> copyRoutines = new ArrayList<>();

    @Spec
    private CommandSpec spec;

    /** Runs {@code bench store} with these arguments (those after {@code store}); returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("store", args, out, err);
    }

    @Override
    public Integer call() {
        List<HostCopyRoutine> routines = routines();
        List<Result> results = new ArrayList<>();
        try {
            Settings settings = Settings.defaults().withChunks(chunks).withRuns(counts.runs(), counts.warmup()).withCopyThreads(copyThreads);
            for (HostCopyRoutine routine : routines) {
                results.add(StoreBench.run(settings.withCopyRoutine(routine), err));
            }
        } catch (RuntimeException e) {
            return CliMain.failure(err, "bench store", "the benchmark failed", e);
        }
        if (results.size() == 1) {
            out.println(json ? json(results.getFirst()) : table(results.getFirst()));
        } else {
            out.println(json ? new ReportJson().objects("copy_routines", results.stream().map(StoreBenchCommand::report)
                    .toList()).toString() : comparison(results));
        }
        long mismatches = results.stream().mapToLong(Result::mismatches).sum();
        if (mismatches != 0) {
            err.println("lmcache4j bench store: FAILED: " + mismatches + " retrieved bytes differ from the stored KV");
            return 1;
        }
        return 0;
    }

    /** The routines asked for, in order, each once: --copy-routine, else --no-streaming-stores, else streaming. */
    private List<HostCopyRoutine> routines() {
        if (!copyRoutines.isEmpty() && noStreamingStores) {
            throw new ParameterException(spec.commandLine(), "--no-streaming-stores and --copy-routine exclude each other "
                    + "(--copy-routine segment-copy is --no-streaming-stores)");
        }
        if (copyRoutines.isEmpty()) {
            return List.of(noStreamingStores ? HostCopyRoutine.SEGMENT_COPY : HostCopyRoutine.STREAMING_STORES);
        }
        Set<HostCopyRoutine> routines = new LinkedHashSet<>();
        for (String label : copyRoutines) {
            try {
                routines.add(HostCopyRoutine.fromLabel(label.trim()));
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), "--copy-routine: " + e.getMessage());
            }
        }
        return List.copyOf(routines);
    }

    static String json(Result r) {
        return report(r).toString();
    }

    private static ReportJson report(Result r) {
        Settings s = r.settings();
        ReportJson candidates = new ReportJson();
        r.parallelCopyGbps().forEach((routine, gbps) -> candidates.number(routine.label(), gbps, 3));
        return new ReportJson()
                .number("store_gbps", r.storeGbps(), 3)
                .number("retrieve_gbps", r.retrieveGbps(), 3)
                .number("memcpy_gbps", r.memcpyGbps(), 3)
                .number("store_vs_memcpy", r.storeVsMemcpy(), 3)
                .number("retrieve_vs_memcpy", r.retrieveVsMemcpy(), 3)
                .number("memcpy_scatter_gbps", r.memcpyScatterGbps(), 3)
                .number("memcpy_whole_chunk_gbps", r.memcpyWholeGbps(), 3)
                .number("store_vs_whole_chunk_memcpy", r.storeGbps() / r.memcpyWholeGbps(), 3)
                .number("retrieve_vs_whole_chunk_memcpy", r.retrieveGbps() / r.memcpyWholeGbps(), 3)
                .number("chunk_memcpy_gbps", r.memcpyContiguousGbps(), 3)
                .number("store_vs_chunk_memcpy", r.storeVsChunkMemcpy(), 3)
                .number("retrieve_vs_chunk_memcpy", r.retrieveVsChunkMemcpy(), 3)
                .bool("store_meets_chunk_memcpy_target", r.storeVsChunkMemcpy() >= TARGET_RATIO)
                .bool("retrieve_meets_chunk_memcpy_target", r.retrieveVsChunkMemcpy() >= TARGET_RATIO)
                .number("best_copy_gbps", r.bestCopyGbps(), 3)
                .string("best_copy_routine", r.bestCopyRoutine().label())
                .number("store_vs_best_copy", r.storeVsBestCopy(), 3)
                .number("retrieve_vs_best_copy", r.retrieveVsBestCopy(), 3)
                .object("best_copy_candidates_gbps", candidates)
                .integer("copy_threads", r.copyThreads())
                .string("copy_routine", s.copyRoutine().label())
                .string("copy_streaming_stores", r.streamingStores())
                .number("streamed_fraction", r.streamedFraction(), 3)
                .number("target_ratio", TARGET_RATIO, 2)
                .bool("store_meets_target", r.storeVsMemcpy() >= TARGET_RATIO)
                .bool("retrieve_meets_target", r.retrieveVsMemcpy() >= TARGET_RATIO)
                .number("engine_store_copy_gbps", r.engineStoreCopyGbps(), 3)
                .number("engine_retrieve_copy_gbps", r.engineRetrieveCopyGbps(), 3)
                .integer("verified_bytes", r.verifiedBytes())
                .integer("mismatches", r.mismatches())
                .integer("chunks", s.chunks())
                .integer("chunk_bytes", s.chunkBytes())
                .integer("run_bytes", r.runBytes())
                .integer("copy_run_bytes", (long) s.blockSize() * s.vectorBytes())
                .integer("cpu_tier_bytes", r.cpuTierBytes())
                .integer("layers", s.layers())
                .integer("kv_heads", s.kvHeads())
                .integer("head_size", s.headSize())
                .integer("block_size", s.blockSize())
                .integer("chunk_size", s.chunkSize())
                .integer("runs", s.runs())
                .integer("warmup", s.warmup())
                .numbers("runs_store_gbps", r.store(), 3)
                .numbers("runs_retrieve_gbps", r.retrieve(), 3)
                .numbers("runs_memcpy_gbps", r.memcpyGather(), 3)
                .numbers("runs_memcpy_scatter_gbps", r.memcpyScatter(), 3)
                .numbers("runs_memcpy_whole_chunk_gbps", r.memcpyWhole(), 3)
                .numbers("runs_chunk_memcpy_gbps", r.memcpyContiguous(), 3)
                .numbers("runs_best_copy_gbps", r.parallelCopies().get(r.bestCopyRoutine()), 3)
                .integer("cores", Runtime.getRuntime().availableProcessors())
                .string("glibc_tunables", Objects.requireNonNullElse(System.getenv("GLIBC_TUNABLES"), ""))
                .string("jdk", Runtime.version().toString())
                .string("method", "GB/s = bytes of KV / wall time, median over runs. store: engine.prepare (hashing) and one engine.store of "
                        + "every chunk (after an untimed clear); retrieve: one engine.retrieve of the same prepared request "
                        + "(not hashed again) into a second shuffled block "
                        + "table; memcpy_gbps: MemorySegment.copy of the store's own runs (one per block, plane and layer) "
                        + "paged -> contiguous; memcpy_scatter_gbps: the retrieve's runs contiguous -> paged; "
                        + "store_vs_memcpy = store / memcpy_gbps, retrieve_vs_memcpy = retrieve / memcpy_scatter_gbps; "
                        + "chunk_memcpy_gbps: one MemorySegment.copy of all the run's bytes, contiguous -> contiguous, "
                        + "store_vs_chunk_memcpy and retrieve_vs_chunk_memcpy divide by it; store and retrieve copy each "
                        + "chunk on copy_threads threads with copy_routine (copy_streaming_stores: avx2/sse2 streaming stores, memcpy, "
                        + "or off), every memcpy baseline runs on one with MemorySegment.copy; best_copy_gbps: all the run's bytes, "
                        + "contiguous -> contiguous, cut into copy_threads contiguous parts, one thread each, with every routine "
                        + "this machine runs (best_copy_candidates_gbps), the fastest routine's median; *_vs_best_copy divide by it");
    }

    static String table(Result r) {
        Settings s = r.settings();
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "store bench: %s, %d layers × %d KV heads × %d, bf16; %d chunks of %d tokens (%s each, "
                        + "%s per run); median of %d runs after %d warmup%n",
                s.metadata().modelName(), s.layers(), s.kvHeads(), s.headSize(), s.chunks(), s.chunkSize(),
                HostArenas.formatBytes(s.chunkBytes()), HostArenas.formatBytes(r.runBytes()), s.runs(), s.warmup()));
        sb.append(String.format(Locale.ROOT, "  %-44s %8s %10s %s%n", "operation", "GB/s", "vs limit", "limit"));
        row(sb, "engine.store (paged -> CPU tier)", r.storeGbps(), r.storeVsMemcpy(), "memcpy gather");
        row(sb, "engine.retrieve (CPU tier -> paged)", r.retrieveGbps(), r.retrieveVsMemcpy(), "memcpy scatter");
        row(sb, "memcpy gather: the store's 32 KiB runs", r.memcpyGbps(), Double.NaN, "");
        row(sb, "memcpy scatter: the retrieve's 32 KiB runs", r.memcpyScatterGbps(), Double.NaN, "");
        row(sb, "memcpy whole 32 MiB chunks", r.memcpyWholeGbps(), Double.NaN, "");
        row(sb, "memcpy one contiguous copy of the run", r.memcpyContiguousGbps(), Double.NaN, "");
        sb.append(String.format(Locale.ROOT, "  store_vs_memcpy %.3f, retrieve_vs_memcpy %.3f (target >= %.2f: %s); "
                        + "against whole-chunk memcpy: store %.3f, retrieve %.3f%n",
                r.storeVsMemcpy(), r.retrieveVsMemcpy(), TARGET_RATIO,
                r.storeVsMemcpy() >= TARGET_RATIO && r.retrieveVsMemcpy() >= TARGET_RATIO ? "met" : "missed",
                r.storeGbps() / r.memcpyWholeGbps(), r.retrieveGbps() / r.memcpyWholeGbps()));
        sb.append(String.format(Locale.ROOT, "  copy threads per chunk %d, streaming stores %s (%.0f%% of the copied bytes); against one contiguous copy: store_vs_chunk_memcpy %.3f, "
                        + "retrieve_vs_chunk_memcpy %.3f (target >= %.2f: %s)%n", r.copyThreads(), r.streamingStores(),
                100 * r.streamedFraction(), r.storeVsChunkMemcpy(), r.retrieveVsChunkMemcpy(), TARGET_RATIO,
                r.storeVsChunkMemcpy() >= TARGET_RATIO && r.retrieveVsChunkMemcpy() >= TARGET_RATIO ? "met" : "missed"));
        sb.append(String.format(Locale.ROOT, "  against the machine's best copy (%d threads, contiguous parts, %s: %.2f GB/s): "
                        + "store_vs_best_copy %.3f, retrieve_vs_best_copy %.3f%n", r.copyThreads(), r.bestCopyRoutine().label(),
                r.bestCopyGbps(), r.storeVsBestCopy(), r.retrieveVsBestCopy()));
        sb.append(String.format(Locale.ROOT, "  engine metrics, measured runs (bytes copied / time in connector copies): store %.2f GB/s, retrieve %.2f GB/s; "
                + "retrieved KV verified: %s, %d mismatching bytes", r.engineStoreCopyGbps(), r.engineRetrieveCopyGbps(),
                HostArenas.formatBytes(r.verifiedBytes()), r.mismatches()));
        return sb.toString();
    }

    /** Each routine's table, then one line a routine: store and retrieve against the best copy of its own invocation. */
    static String comparison(List<Result> results) {
        StringBuilder sb = new StringBuilder();
        for (Result r : results) {
            sb.append("copy routine ").append(r.settings().copyRoutine().label()).append(":\n").append(table(r)).append("\n\n");
        }
        sb.append(String.format(Locale.ROOT, "copy routines compared (%d copy threads; best copy measured beside each):%n",
                results.getFirst().copyThreads()));
        sb.append(String.format(Locale.ROOT, "  %-14s %-18s %10s %8s %13s %8s %10s %s%n", "routine", "writes", "store GB/s",
                "vs best", "retrieve GB/s", "vs best", "best GB/s", "best routine"));
        for (Result r : results) {
            sb.append(String.format(Locale.ROOT, "  %-14s %-18s %10.2f %8.3f %13.2f %8.3f %10.2f %s%n",
                    r.settings().copyRoutine().label(), r.streamingStores(), r.storeGbps(), r.storeVsBestCopy(),
                    r.retrieveGbps(), r.retrieveVsBestCopy(), r.bestCopyGbps(), r.bestCopyRoutine().label()));
        }
        return sb.toString().stripTrailing();
    }

    private static void row(StringBuilder sb, String name, double gbps, double ratio, String limit) {
        sb.append(String.format(Locale.ROOT, "  %-44s %8.2f %10s %s%n", name, gbps,
                Double.isNaN(ratio) ? "" : String.format(Locale.ROOT, "%.3f", ratio), limit));
    }
}
