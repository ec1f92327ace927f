package lmcache4j.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;

import lmcache4j.allocator.host.HostArenas;
import lmcache4j.bench.json.ReportJson;
import lmcache4j.engine.remote.redis.RedisLayout;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import lmcache4j.bench.remote.RemoteBench;
import lmcache4j.bench.remote.RemoteBench.Pair;
import lmcache4j.bench.remote.RemoteBench.Result;
import lmcache4j.bench.remote.RemoteBench.Settings;

/**
 * {@code ./lmcache4j bench redis [--json] [--chunks N] [--runs N] [--warmup N] [--tokens N] [--no-lm]
 * [--no-redis-benchmark] [--split-part-mb N] [--split-connections N] [--cluster-masters N,N|none]}: the remote
 * tier against raw Lettuce over a local redis-server, the split Redis layout against LMCache's single-value
 * one (same server, same runs, and on Redis Clusters of the given sizes), and lm:// against the
 * LmConnector itself ({@link RemoteBench}). Exit 0 whether or not targets are met;
 * 2 for a usage error; 1 when the benchmark fails or read back wrong bytes.
 */
@Command(name = "redis", description = {"the remote tier's put and get GB/s over redis-server and lm:// against their clients alone.",
                "Put and get of 256-token Llama-3-8B chunks (KV_2LTD [2, 32, 256, 1024] bf16, 32 MiB) through the remote "
                + "tier (RemoteBackend: batchedSubmitPut + awaitPuts, getBlocking from a thread per chunk) over a redis-server "
                + "it starts on a free loopback port (--save '' --appendonly no --proto-max-bulk-len 1gb), against raw Lettuce "
                + "SET/GET (ByteArrayCodec, every chunk in flight at once) of the same bytes in the same process (target >= "
                + RedisBenchCommand.TARGET_RATIO + " of raw); redis-benchmark -t set,get -n 20 -d <chunk bytes> -q beside it "
                + "when installed. The split layout (parts of --split-part-mb over --split-connections connections plus a "
                + "manifest) through the tier on the same server in the same runs (target split get >= "
                + RedisBenchCommand.SPLIT_TARGET + " x the single-value layout's), then both layouts on Redis Clusters of "
                + "--cluster-masters masters it starts on loopback ports. Then the same over lm:// (an in-process LmCacheServer) against its ceiling: the same "
                + "LmConnector's put/get called directly for every chunk at once, without the tier (target >= "
                + RedisBenchCommand.TARGET_RATIO + ")."})
public final class RedisBenchCommand implements CliMain.Command {
    static final double TARGET_RATIO = 0.8;
    /** The split layout's get against the single-value layout's, on one standalone Redis (issue 16). */
    static final double SPLIT_TARGET = 2.0;

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object (remote_put_gbps, remote_get_gbps, raw_set_gbps, "
            + "raw_get_gbps, put_vs_raw, get_vs_raw, lm_*, ...) instead of the table")
    private boolean json;

    private int chunks = Settings.DEFAULT_CHUNKS;
    private int runs = Settings.DEFAULT_RUNS;
    private int warmup = Settings.DEFAULT_WARMUP;
    private int tokens = Settings.defaults().tokens();

    @Option(names = "--no-lm", order = 5, description = "skip the lm:// part")
    private boolean noLm;

    @Option(names = "--no-redis-benchmark", order = 6, description = "do not run redis-benchmark")
    private boolean noRedisBenchmark;

    private int splitPartMb = RedisLayout.DEFAULT_PART_MB;
    private int splitConnections = RedisLayout.DEFAULT_CONNECTIONS;
    private List<Integer> clusterMasters = Settings.DEFAULT_CLUSTER_MASTERS;

    RedisBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--chunks", paramLabel = "N", order = 1, description = "chunks per put and get (default "
            + Settings.DEFAULT_CHUNKS + ", 1.." + Settings.MAX_CHUNKS + ")")
    private void chunks(String value) {
        chunks = OptionValues.intInRange("--chunks", value, 1, Settings.MAX_CHUNKS);
    }

    @Option(names = "--runs", paramLabel = "N", order = 2, description = "measured runs (default " + Settings.DEFAULT_RUNS + ")")
    private void runs(String value) {
        runs = OptionValues.intInRange("--runs", value, 1, 1000);
    }

    @Option(names = "--warmup", paramLabel = "N", order = 3, description = "unmeasured runs first (default " + Settings.DEFAULT_WARMUP + ")")
    private void warmup(String value) {
        warmup = OptionValues.intInRange("--warmup", value, 0, 1000);
    }

    @Option(names = "--tokens", paramLabel = "N", order = 4, description = "tokens per chunk (default 256; smaller for quick checks)")
    private void tokens(String value) {
        tokens = OptionValues.intInRange("--tokens", value, 1, 256);
    }

    @Option(names = "--split-part-mb", paramLabel = "N", order = 7, description = "the split layout's part size in MiB (default "
            + RedisLayout.DEFAULT_PART_MB + ", " + RedisLayout.MIN_PART_MB + ".." + RedisLayout.MAX_PART_MB + ")")
    private void splitPartMb(String value) {
        splitPartMb = OptionValues.intInRange("--split-part-mb", value, RedisLayout.MIN_PART_MB, RedisLayout.MAX_PART_MB);
    }

    @Option(names = "--split-connections", paramLabel = "N", order = 8, description = "the split layout's connections (default "
            + RedisLayout.DEFAULT_CONNECTIONS + ", 1.." + RedisLayout.MAX_CONNECTIONS + ")")
    private void splitConnections(String value) {
        splitConnections = OptionValues.intInRange("--split-connections", value, 1, RedisLayout.MAX_CONNECTIONS);
    }

    @Option(names = "--cluster-masters", paramLabel = "N,N|none", order = 9, description = "sizes of the Redis Clusters to "
            + "measure both layouts on, each started on loopback ports (default 1,3; each 1..8; none skips them)")
    private void clusterMasters(String value) {
        if (value.equals("none")) {
            clusterMasters = List.of();
            return;
        }
        List<Integer> sizes = new ArrayList<>();
        for (String v : value.split(",", -1)) {
            sizes.add(OptionValues.intInRange("--cluster-masters", v, 1, 8));
        }
        clusterMasters = List.copyOf(sizes);
    }

    /** Runs {@code bench redis} with these arguments (those after {@code redis}); returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("redis", args, out, err);
    }

    @Override
    public Integer call() {
        Settings d = Settings.defaults();
        Settings s = new Settings(chunks, runs, warmup, d.layers(), tokens, d.hidden(), !noLm, !noRedisBenchmark,
                splitPartMb, splitConnections, clusterMasters);
        Result r;
        try {
            r = RemoteBench.run(s, err);
        } catch (Exception e) {
            return CliMain.failure(err, "bench redis", "the benchmark failed", e);
        }
        out.println(json ? json(r) : table(r));
        if (r.mismatches() != 0) {
            err.println("lmcache4j bench redis: FAILED: " + r.mismatches() + " chunks read back differ from what was put");
            return 1;
        }
        return 0;
    }

    private static Optional<Double> opt(OptionalDouble v) {
        return v.isPresent() ? Optional.of(v.getAsDouble()) : Optional.empty();
    }

    private static Optional<Double> gbps(OptionalDouble rps, long bytes) {
        return rps.isPresent() ? Optional.of(rps.getAsDouble() * bytes / 1e9) : Optional.empty();
    }

    static String json(Result r) {
        Settings s = r.settings();
        Pair t = r.redisTier();
        Pair raw = r.redisRaw();
        ReportJson j = new ReportJson()
                .number("remote_put_gbps", t.putGbps(), 3)
                .number("remote_get_gbps", t.getGbps(), 3)
                .number("raw_set_gbps", raw.putGbps(), 3)
                .number("raw_get_gbps", raw.getGbps(), 3)
                .number("put_vs_raw", t.putGbps() / raw.putGbps(), 3)
                .number("get_vs_raw", t.getGbps() / raw.getGbps(), 3)
                .number("split_put_gbps", r.redisSplit().putGbps(), 3)
                .number("split_get_gbps", r.redisSplit().getGbps(), 3)
                .number("split_vs_single", r.redisSplit().getGbps() / t.getGbps(), 3)
                .number("split_put_vs_single", r.redisSplit().putGbps() / t.putGbps(), 3)
                .number("split_target", SPLIT_TARGET, 2)
                .bool("split_get_meets_target", r.redisSplit().getGbps() / t.getGbps() >= SPLIT_TARGET)
                .integer("split_part_bytes", (long) s.splitPartMb() << 20)
                .integer("split_connections", s.splitConnections())
                .string("cluster_masters", r.cluster().stream().map(c -> Integer.toString(c.masters()))
                        .collect(Collectors.joining(",")))
                .numbers("cluster_single_put_gbps", clusterMedians(r, c -> c.single().putGbps()), 3)
                .numbers("cluster_single_get_gbps", clusterMedians(r, c -> c.single().getGbps()), 3)
                .numbers("cluster_split_put_gbps", clusterMedians(r, c -> c.split().putGbps()), 3)
                .numbers("cluster_split_get_gbps", clusterMedians(r, c -> c.split().getGbps()), 3)
                .number("cluster_split_get_scaling", clusterScaling(r, c -> c.split().getGbps()), 3)
                .number("cluster_single_get_scaling", clusterScaling(r, c -> c.single().getGbps()), 3)
                .number("target_ratio", TARGET_RATIO, 2)
                .bool("put_meets_target", t.putGbps() / raw.putGbps() >= TARGET_RATIO)
                .bool("get_meets_target", t.getGbps() / raw.getGbps() >= TARGET_RATIO)
                .number("redis_benchmark_set_gbps", gbps(r.redisBenchmark().setRps(), s.chunkBytes()), 3)
                .number("redis_benchmark_get_gbps", gbps(r.redisBenchmark().getRps(), s.chunkBytes()), 3)
                .number("redis_benchmark_set_rps", opt(r.redisBenchmark().setRps()), 3)
                .number("redis_benchmark_get_rps", opt(r.redisBenchmark().getRps()), 3)
                .string("redis_benchmark", r.redisBenchmark().note())
                .number("lm_put_gbps", r.lmTier().map(Pair::putGbps), 3)
                .number("lm_get_gbps", r.lmTier().map(Pair::getGbps), 3)
                .number("lm_ceiling_put_gbps", r.lmCeiling().map(Pair::putGbps), 3)
                .number("lm_ceiling_get_gbps", r.lmCeiling().map(Pair::getGbps), 3)
                .number("lm_put_vs_ceiling", r.lmTier().map(p -> p.putGbps() / r.lmCeiling().orElseThrow().putGbps()), 3)
                .number("lm_get_vs_ceiling", r.lmTier().map(p -> p.getGbps() / r.lmCeiling().orElseThrow().getGbps()), 3)
                .bool("lm_put_meets_target", r.lmTier().map(p -> p.putGbps() / r.lmCeiling().orElseThrow().putGbps() >= TARGET_RATIO))
                .bool("lm_get_meets_target", r.lmTier().map(p -> p.getGbps() / r.lmCeiling().orElseThrow().getGbps() >= TARGET_RATIO))
                .integer("mismatches", r.mismatches())
                .integer("chunks", s.chunks())
                .integer("chunk_bytes", s.chunkBytes())
                .integer("tokens", s.tokens())
                .integer("runs", s.runs())
                .integer("warmup", s.warmup())
                .numbers("runs_remote_put_gbps", t.put(), 3)
                .numbers("runs_remote_get_gbps", t.get(), 3)
                .numbers("runs_raw_set_gbps", raw.put(), 3)
                .numbers("runs_raw_get_gbps", raw.get(), 3)
                .numbers("runs_split_put_gbps", r.redisSplit().put(), 3)
                .numbers("runs_split_get_gbps", r.redisSplit().get(), 3);
        r.lmTier().ifPresent(p -> j.numbers("runs_lm_put_gbps", p.put(), 3).numbers("runs_lm_get_gbps", p.get(), 3));
        r.lmCeiling().ifPresent(p -> j.numbers("runs_lm_ceiling_put_gbps", p.put(), 3).numbers("runs_lm_ceiling_get_gbps", p.get(), 3));
        return j.string("redis_version", r.redisVersion())
                .integer("cores", Runtime.getRuntime().availableProcessors())
                .string("jdk", Runtime.version().toString())
                .string("method", "GB/s = payload bytes / wall time, median over runs, one process, loopback. remote_*: "
                        + "RemoteBackend over RedisConnector (batchedSubmitPut of every chunk + awaitPuts; getBlocking from "
                        + "a thread per chunk); raw_*: Lettuce ByteArrayCodec SET/GET of the same bytes, every chunk in "
                        + "flight at once on one connection; lm_*: RemoteBackend over LmConnector (pool 4) to an in-process "
                        + "LmCacheServer; lm_ceiling_*: the same LmConnector's put/get directly, every chunk at once, no tier; "
                        + "redis_benchmark_*_gbps = its requests/s x chunk_bytes; split_*: the same tier over the split "
                        + "layout (split_part_bytes parts over split_connections connections, manifest last) on the same "
                        + "server in the same runs, split_vs_single = split_get_gbps / remote_get_gbps; cluster_*: both "
                        + "layouts through the tier on Redis Clusters of cluster_masters masters (one value per size), "
                        + "*_scaling = the largest cluster's get GB/s / the smallest's")
                .toString();
    }

    /** One median per cluster size, in the order measured. */
    private static double[] clusterMedians(Result r, ToDoubleFunction<RemoteBench.ClusterRun> f) {
        return r.cluster().stream().mapToDouble(f).toArray();
    }

    /** The largest cluster's figure over the smallest's; empty with fewer than two sizes. */
    private static Optional<Double> clusterScaling(Result r, ToDoubleFunction<RemoteBench.ClusterRun> f) {
        if (r.cluster().size() < 2) {
            return Optional.empty();
        }
        RemoteBench.ClusterRun small = r.cluster().stream().min(Comparator.comparingInt(RemoteBench.ClusterRun::masters)).orElseThrow();
        RemoteBench.ClusterRun large = r.cluster().stream().max(Comparator.comparingInt(RemoteBench.ClusterRun::masters)).orElseThrow();
        return Optional.of(f.applyAsDouble(large) / f.applyAsDouble(small));
    }

    static String table(Result r) {
        Settings s = r.settings();
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "redis bench: %d chunks of %d tokens (KV_2LTD [2, %d, %d, %d] bf16, %s each, %s per run); "
                        + "median of %d runs after %d warmup; redis-server %s%n", s.chunks(), s.tokens(), s.layers(), s.tokens(),
                s.hidden(), HostArenas.formatBytes(s.chunkBytes()), HostArenas.formatBytes(s.totalBytes()), s.runs(), s.warmup(),
                r.redisVersion()));
        sb.append(String.format(Locale.ROOT, "  %-50s %8s %8s%n", "operation", "GB/s", "vs limit"));
        double pr = r.redisTier().putGbps() / r.redisRaw().putGbps();
        double gr = r.redisTier().getGbps() / r.redisRaw().getGbps();
        row(sb, "redis tier put (RemoteBackend/RedisConnector)", r.redisTier().putGbps(), pr, TARGET_RATIO);
        row(sb, "redis tier get", r.redisTier().getGbps(), gr, TARGET_RATIO);
        Pair sp = r.redisSplit();
        String layout = String.format(Locale.ROOT, "%d MiB parts, %d conns", s.splitPartMb(), s.splitConnections());
        row(sb, "split layout put (" + layout + ") vs single", sp.putGbps(), sp.putGbps() / r.redisTier().putGbps(), 0);
        row(sb, "split layout get vs single", sp.getGbps(), sp.getGbps() / r.redisTier().getGbps(), SPLIT_TARGET);
        row(sb, "raw Lettuce SET (the limit)", r.redisRaw().putGbps(), Double.NaN, 0);
        row(sb, "raw Lettuce GET (the limit)", r.redisRaw().getGbps(), Double.NaN, 0);
        RemoteBench.RedisBenchmark rb = r.redisBenchmark();
        if (rb.setRps().isPresent() && rb.getRps().isPresent()) {
            row(sb, String.format(Locale.ROOT, "redis-benchmark SET (%.1f req/s)", rb.setRps().getAsDouble()),
                    rb.setRps().getAsDouble() * s.chunkBytes() / 1e9, Double.NaN, 0);
            row(sb, String.format(Locale.ROOT, "redis-benchmark GET (%.1f req/s)", rb.getRps().getAsDouble()),
                    rb.getRps().getAsDouble() * s.chunkBytes() / 1e9, Double.NaN, 0);
        }
        sb.append("  redis-benchmark: ").append(rb.note()).append('\n');
        for (RemoteBench.ClusterRun c : r.cluster()) {
            String on = "cluster of " + c.masters() + (c.masters() == 1 ? " master" : " masters");
            row(sb, on + ": single layout put", c.single().putGbps(), Double.NaN, 0);
            row(sb, on + ": single layout get", c.single().getGbps(), Double.NaN, 0);
            row(sb, on + ": split layout put", c.split().putGbps(), Double.NaN, 0);
            row(sb, on + ": split layout get", c.split().getGbps(), Double.NaN, 0);
        }
        if (r.lmTier().isPresent()) {
            Pair t = r.lmTier().get();
            Pair c = r.lmCeiling().orElseThrow();
            row(sb, "lm:// tier put (RemoteBackend/LmConnector)", t.putGbps(), t.putGbps() / c.putGbps(), TARGET_RATIO);
            row(sb, "lm:// tier get", t.getGbps(), t.getGbps() / c.getGbps(), TARGET_RATIO);
            row(sb, "lm:// ceiling: LmConnector.put direct", c.putGbps(), Double.NaN, 0);
            row(sb, "lm:// ceiling: LmConnector.get direct", c.getGbps(), Double.NaN, 0);
        }
        sb.append(String.format(Locale.ROOT, "  read-back verified: %d mismatching chunks", r.mismatches()));
        return sb.toString();
    }

    private static void row(StringBuilder sb, String name, double gbps, double ratio, double target) {
        sb.append(String.format(Locale.ROOT, "  %-50s %8.2f %8s %s%n", name, gbps,
                Double.isNaN(ratio) ? "" : String.format(Locale.ROOT, "%.3f", ratio),
                Double.isNaN(ratio) || target <= 0 ? "" : (ratio >= target ? "met" : "missed") + " (target >= " + target + ")"));
    }
}
