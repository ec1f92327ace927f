package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.trace.Capacity;
import lmcache4j.bench.trace.EngineReplay;
import lmcache4j.bench.trace.ModelShape;
import lmcache4j.bench.trace.Trace;
import lmcache4j.bench.trace.TraceSweep;
import lmcache4j.bench.trace.TraceSweep.Point;
import lmcache4j.bench.trace.TraceSweep.PolicyResult;
import lmcache4j.bench.trace.TraceSweep.Report;
import lmcache4j.engine.storage.policy.CachePolicies;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench trace [--trace FILE] [--json] ...}: a request trace replayed through the
 * engine's tiers for every policy and capacity ({@link TraceSweep}), against Belady's MIN and the
 * infinite cache, as a table or one JSON object; {@link BenchCommand} dispatches here. Progress goes
 * to stderr; exit status 2 for a usage error (a malformed trace line included), 1 when the replay fails.
 */
@Command(name = "trace", description = {"replays a request trace through the engine's tiers: hit rates of every "
        + "eviction policy at every capacity against Belady's optimum.",
        "Each request of a Mooncake-format trace (default: Mooncake's conversation trace, bundled) looks up its full "
                + "blocks in a StorageManager over the CPU tier with cache_policy set (and a disk tier below it with "
                + "--disk), counts the leading hits, reads them and stores the rest. Belady's MIN and the infinite cache "
                + "are computed from the same trace. Capacities: N%% of the trace's distinct blocks, Nb blocks, Nt / NMt "
                + "tokens, NGB of the --model's KV. Also times the whole-trace LRU replay against a plain LinkedHashMap "
                + "LRU of the same chunk accesses."})
public final class TraceBenchCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object instead of the table")
    private boolean json;

    private TraceInput input = new TraceInput();
    private List<String> policies = TraceSweep.DEFAULT_POLICIES;
    private List<Capacity> capacities = Capacity.parseList(Capacity.DEFAULT_SWEEP);
    private int chunkTokens;
    private ModelShape model = ModelShape.DEFAULT;
    private boolean bytes;
    private int requests = Integer.MAX_VALUE;
    private Capacity disk;
    private Path diskDir;

    TraceBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--trace", paramLabel = "FILE", order = 1, description = "a trace in Mooncake's JSON-lines format, "
            + "plain or gzip (default: the bundled conversation trace)")
    private void trace(String value) {
        input.path(value);
    }

    @Option(names = "--block-tokens", paramLabel = "N", order = 2, description = "tokens per block of the trace's "
            + "hash_ids (default 512, Mooncake's)")
    private void blockTokens(String value) {
        input.blockTokens(OptionValues.intInRange("--block-tokens", value, 1, 1 << 20));
    }

    @Option(names = "--chunk-tokens", paramLabel = "N", order = 3, description = "tokens per cache chunk: the block "
            + "size (default) or a divisor of it, e.g. 256 for two chunks per 512-token block")
    private void chunkTokens(String value) {
        chunkTokens = OptionValues.intInRange("--chunk-tokens", value, 1, 1 << 20);
    }

    @Option(names = "--policies", paramLabel = "LIST", order = 4, description = "cache_policy names, comma-separated "
            + "(default: all of LRU, LFU, FIFO, MRU, S3FIFO, ARC, KV_ADAPTIVE)")
    private void policies(String value) {
        policies = policyList(value);
    }

    @Option(names = "--capacities", paramLabel = "LIST", order = 5, description = "CPU tier capacities, comma-separated "
            + "(default 1%%,2%%,3Mt,5%%,10%%,15%%,20%%,25%%)")
    private void capacities(String value) {
        capacities = Capacity.parseList(value);
    }

    @Option(names = "--model", paramLabel = "SHAPE", order = 6, description = "the KV shape for GB: llama-3-8b "
            + "(default, bf16, 128 KiB per token), llama-3-70b, mistral-7b, qwen2.5-7b, qwen2.5-72b, or KV bytes per token")
    private void model(String value) {
        model = ModelShape.parse(value);
    }

    @Option(names = "--bytes", order = 7, description = "chunks with real bytes (a small KV shape, filled on store and "
            + "checked on every hit) instead of metadata only; pair with --requests, it is slower")
    private void bytes(boolean value) {
        bytes = value;
    }

    @Option(names = "--requests", paramLabel = "N", order = 8, description = "replay only the first N requests")
    private void requests(String value) {
        requests = OptionValues.intAtLeast("--requests", value, 1);
    }

    @Option(names = "--disk", paramLabel = "CAPACITY", order = 9, description = "a disk tier of this capacity below the "
            + "CPU tier (files in a temporary directory, deleted at the end)")
    private void disk(String value) {
        disk = Capacity.parse(value);
    }

    @Option(names = "--disk-dir", paramLabel = "DIR", order = 10, description = "where the disk tier's temporary "
            + "directory goes (default java.io.tmpdir)")
    private void diskDir(String value) {
        diskDir = Path.of(value);
        if (!Files.isDirectory(diskDir)) {
            throw new IllegalArgumentException("--disk-dir '" + CliText.echo(value) + "' is not a directory");
        }
    }

    /** Parses a comma-separated list of {@code cache_policy} names, each checked. */
    static List<String> policyList(String value) {
        List<String> names = new ArrayList<>();
        for (String p : value.split(",")) {
            if (p.isBlank()) {
                continue;
            }
            String name = p.strip().toUpperCase(Locale.ROOT);
            if (!CachePolicies.NAMES.contains(name)) {
                throw new IllegalArgumentException("--policies: unknown cache_policy '" + CliText.echo(p.strip())
                        + "'; valid: " + String.join(", ", CachePolicies.NAMES));
            }
            if (!names.contains(name)) {
                names.add(name);
            }
        }
        if (names.isEmpty()) {
            throw new IllegalArgumentException("--policies needs at least one cache_policy name");
        }
        return names;
    }

    @Override
    public String missingValue(String option) {
        return option + (option.equals("--trace") ? " needs a file" : " needs a value");
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("trace", args, out, err);
    }

    @Override
    public Integer call() {
        Trace trace;
        try {
            trace = input.read().prefix(requests);
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "bench trace", e.getMessage());
        }
        int chunk = chunkTokens == 0 ? trace.blockTokens() : chunkTokens;
        if (trace.blockTokens() % chunk != 0) {
            return CliMain.usageError(err, "bench trace", "--chunk-tokens " + chunk + " must divide the block size "
                    + trace.blockTokens());
        }
        Report report;
        try {
            report = TraceSweep.run(new TraceSweep.Settings(trace, policies, capacities, chunk,
                    bytes ? EngineReplay.Mode.BYTES : EngineReplay.Mode.METADATA, model, disk, diskDir), err);
        } catch (RuntimeException e) {
            return CliMain.failure(err, "bench trace", "the replay failed", e);
        }
        out.println(json ? json(report) : table(report));
        return 0;
    }

    // ---- output -------------------------------------------------------------------------------

    static String table(Report r) {
        TraceSweep.Settings s = r.settings();
        Trace t = s.trace();
        StringBuilder sb = new StringBuilder();
        sb.append("== lmcache4j trace replay ==\n");
        sb.append(String.format(Locale.ROOT, "trace     %s%n", t.source()));
        sb.append(String.format(Locale.ROOT, "          %,d requests over %,.0f s; %,d full-block lookups, %,d distinct full "
                + "blocks of %d tokens; chunks of %d tokens (%d per block)%n", r.requests(), t.durationSeconds(),
                r.fullBlockAccesses(), r.distinctFullBlocks(), t.blockTokens(), s.chunkTokens(), r.chunksPerBlock()));
        sb.append(String.format(Locale.ROOT, "infinite  %.2f %% of chunk lookups hit (the most any cache can)%n",
                100 * r.chunkRate(r.infiniteChunks())));
        sb.append("method    each policy: the whole trace through StorageManager + LocalCpuBackend (cache_policy)")
                .append(r.diskChunks() > 0 ? String.format(Locale.ROOT, " + LocalDiskBackend (%,d chunks)", r.diskChunks()) : "")
                .append(s.mode() == EngineReplay.Mode.METADATA ? ", metadata-only chunks" : ", chunks with bytes, every hit checked")
                .append("; Belady: offline MIN of the same trace\n");
        sb.append(String.format(Locale.ROOT, "machine   %s, %d cores, JDK %s%n", MachineReport.cpuModel(),
                Runtime.getRuntime().availableProcessors(), Runtime.version()));
        sb.append('\n');
        sb.append("vs_belady (hits / Belady's hits), per capacity\n");
        StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "%-12s", "policy"));
        for (Point p : r.points()) {
            head.append(String.format(Locale.ROOT, " %9s", p.capacity().text()));
        }
        sb.append(head).append('\n').append("-".repeat(head.length())).append('\n');
        for (int i = 0; i < s.policies().size(); i++) {
            sb.append(String.format(Locale.ROOT, "%-12s", s.policies().get(i)));
            for (Point p : r.points()) {
                sb.append(String.format(Locale.ROOT, " %9.3f", (double) p.results().get(i).hitChunks() / p.beladyChunks()));
            }
            sb.append('\n');
        }
        sb.append('\n');
        String h = String.format(Locale.ROOT, "%-9s %9s %12s %9s  %-12s %9s %9s %9s %8s %7s", "capacity", "blocks", "tokens",
                "GB", "policy", "hit%blk", "hit%tok", "vs_belady", "vs_lru", "s");
        sb.append(h).append('\n').append("-".repeat(h.length())).append('\n');
        int lru = s.policies().indexOf("LRU");
        for (Point p : r.points()) {
            long tokens = (long) p.blocks() * t.blockTokens();
            String size = String.format(Locale.ROOT, "%-9s %,9d %,12d %9.2f", p.capacity().text(), p.blocks(), tokens,
                    s.model().bytes(tokens) / 1e9);
            sb.append(String.format(Locale.ROOT, "%s  %-12s %9.2f %9s %9.3f%n", size, "BELADY",
                    100 * r.chunkRate(p.beladyChunks()), "", 1.0));
            sb.append(String.format(Locale.ROOT, "%s  %-12s %9.2f %9s %9.3f%n", " ".repeat(size.length()), "LRU curve",
                    100 * r.chunkRate(p.lruCurveChunks()), "", (double) p.lruCurveChunks() / p.beladyChunks()));
            for (PolicyResult pr : p.results()) {
                sb.append(String.format(Locale.ROOT, "%s  %-12s %9.2f %9.2f %9.3f %8s %7.2f%n", " ".repeat(size.length()),
                        pr.policy(), 100 * r.blockRate(pr), 100 * r.tokenRate(pr), (double) pr.hitChunks() / p.beladyChunks(),
                        lru < 0 ? "-" : String.format(Locale.ROOT, "%.3f", (double) pr.hitChunks() / p.results().get(lru).hitChunks()),
                        pr.seconds()));
            }
        }
        sb.append('\n');
        sb.append("hit%blk: full blocks hit / full-block lookups; hit%tok: tokens served / all prompt tokens (partial last\n");
        sb.append("  blocks count as misses); BELADY and LRU curve rows: chunk hits / chunk lookups; LRU curve: the one-pass\n");
        sb.append(String.format(Locale.ROOT, "  stack-distance LRU (what `plan` draws); GB: KV of %s (%,d bytes per token).%n",
                s.model().name(), s.model().bytesPerToken()));
        TraceSweep.Speed sp = r.speed();
        sb.append(String.format(Locale.ROOT, "speed     %s replay of the whole trace at %,d chunks, metadata only: %,.0f chunk ops/s "
                        + "(%.2f s); plain LinkedHashMap LRU of the same accesses: %,.0f ops/s (%.2f s); ratio %.3f (median of %d)",
                sp.policy(), sp.chunks(), sp.replayOpsPerSecond(), sp.replaySeconds(), sp.hashMapOpsPerSecond(),
                sp.hashMapSeconds(), sp.replayOpsPerSecond() / sp.hashMapOpsPerSecond(), 3));
        return sb.toString();
    }

    static String json(Report r) {
        TraceSweep.Settings s = r.settings();
        ReportJson j = new ReportJson();
        j.string("trace", s.trace().source());
        j.integer("requests", r.requests());
        j.integer("block_tokens", s.trace().blockTokens());
        j.integer("chunk_tokens", s.chunkTokens());
        j.integer("full_block_lookups", r.fullBlockAccesses());
        j.integer("distinct_full_blocks", r.distinctFullBlocks());
        j.number("infinite_hit_rate", r.chunkRate(r.infiniteChunks()), 4);
        j.string("mode", s.mode().name().toLowerCase(Locale.ROOT));
        j.integer("disk_chunks", r.diskChunks());
        j.string("model", s.model().name());
        j.integer("model_bytes_per_token", s.model().bytesPerToken());
        List<ReportJson> points = new ArrayList<>();
        int lru = s.policies().indexOf("LRU");
        for (Point p : r.points()) {
            ReportJson pj = new ReportJson();
            long tokens = (long) p.blocks() * s.trace().blockTokens();
            pj.string("capacity", p.capacity().text());
            pj.integer("blocks", p.blocks());
            pj.integer("chunks", p.chunks());
            pj.integer("tokens", tokens);
            pj.number("gb", s.model().bytes(tokens) / 1e9, 3);
            pj.integer("belady_hit_chunks", p.beladyChunks());
            pj.number("belady_hit_rate", r.chunkRate(p.beladyChunks()), 4);
            pj.integer("lru_curve_hit_chunks", p.lruCurveChunks());
            List<ReportJson> policies = new ArrayList<>();
            for (PolicyResult pr : p.results()) {
                ReportJson q = new ReportJson();
                q.string("policy", pr.policy());
                q.integer("hit_chunks", pr.hitChunks());
                q.integer("hit_blocks", pr.hitBlocks());
                q.integer("disk_hit_chunks", pr.diskHitChunks());
                q.number("hit_rate_blocks", r.blockRate(pr), 4);
                q.number("hit_rate_tokens", r.tokenRate(pr), 4);
                q.number("vs_belady", (double) pr.hitChunks() / p.beladyChunks(), 4);
                if (lru >= 0) {
                    q.number("vs_lru", (double) pr.hitChunks() / p.results().get(lru).hitChunks(), 4);
                }
                q.number("seconds", pr.seconds(), 3);
                policies.add(q);
            }
            pj.objects("policies", policies);
            points.add(pj);
        }
        j.objects("points", points);
        TraceSweep.Speed sp = r.speed();
        j.integer("speed_chunks", sp.chunks());
        j.integer("speed_chunk_ops", sp.chunkOps());
        j.number("replay_chunk_ops_per_s", sp.replayOpsPerSecond(), 0);
        j.number("hashmap_lru_ops_per_s", sp.hashMapOpsPerSecond(), 0);
        j.number("replay_vs_hashmap", sp.replayOpsPerSecond() / sp.hashMapOpsPerSecond(), 4);
        j.string("cpu", MachineReport.cpuModel());
        j.integer("cores", Runtime.getRuntime().availableProcessors());
        j.string("jdk", Runtime.version().toString());
        return j.toString();
    }
}
