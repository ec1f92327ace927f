package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.s3.S3Bench;
import lmcache4j.bench.s3.S3Bench.Result;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench s3 [--json] [--chunks N] [--runs N] [--warmup N] [--part-mb N] [--dir D]}: the S3
 * tier against the raw AWS SDK client over a real S3 server ({@link S3Bench}). Exit 0 whether or not the
 * targets are met; 2 for a usage error; 1 when the benchmark fails or reads back wrong bytes.
 */
@Command(name = "s3", description = {"the S3 tier's put and get GB/s against the raw AWS SDK client, and ranged parallel GETs "
        + "against one GET.",
        "Put and get of 256-token Llama-3-8B chunks (KV_2LTD [2, 32, 256, 1024] bf16, 32 MiB), every chunk in flight at once, "
                + "through the S3 connector (CRC32C, user metadata, off-heap payloads) and through the same SDK client alone "
                + "(putObject from a direct buffer, getObject toBytes), alternating run by run, against s3proxy (a real S3 API "
                + "server) it starts on a free loopback port over /dev/shm (target >= " + S3BenchCommand.TARGET_RATIO
                + " of raw); then the tier's gets in parallel ranged parts of --part-mb (s3_part_size) against its default "
                + "one GET per object."})
public final class S3BenchCommand implements CliMain.Command {
    static final double TARGET_RATIO = 0.9;

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object (put_gbps, raw_put_gbps, get_gbps, raw_get_gbps, "
            + "put_vs_raw, get_vs_raw, single_get_gbps, ranged_vs_single, ...) instead of the table")
    private boolean json;

    private int chunks = 8;
    private int runs = 5;
    private int warmup = 1;
    private int partMb = 8;
    private Optional<Path> dir = Optional.empty();

    S3BenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--chunks", paramLabel = "N", order = 1, description = "chunks per put and get (default 8, 1..32)")
    private void chunks(String value) {
        chunks = OptionValues.intInRange("--chunks", value, 1, 32);
    }

    @Option(names = "--runs", paramLabel = "N", order = 2, description = "measured runs (default 5)")
    private void runs(String value) {
        runs = OptionValues.intInRange("--runs", value, 1, 1000);
    }

    @Option(names = "--warmup", paramLabel = "N", order = 3, description = "unmeasured runs first (default 1)")
    private void warmup(String value) {
        warmup = OptionValues.intInRange("--warmup", value, 0, 1000);
    }

    @Option(names = "--part-mb", paramLabel = "N", order = 4, description = "the ranged GETs' part size in MiB (default 8, 1..32)")
    private void partMb(String value) {
        partMb = OptionValues.intInRange("--part-mb", value, 1, 32);
    }

    @Option(names = "--dir", paramLabel = "D", order = 5, description = "where s3proxy keeps its objects (default /dev/shm "
            + "when it has room, else the temporary directory)")
    private void dir(String value) {
        dir = Optional.of(Path.of(value));
    }

    @Override
    public Integer call() {
        Result r;
        try {
            r = S3Bench.run(new S3Bench.Settings(chunks, runs, warmup, partMb, dir), err);
        } catch (Exception e) {
            return CliMain.failure(err, "bench s3", "the benchmark failed", e);
        }
        out.println(json ? json(r) : table(r));
        return 0;
    }

    static String json(Result r) {
        return new ReportJson()
                .number("put_gbps", r.putGbps(), 3)
                .number("raw_put_gbps", r.rawPutGbps(), 3)
                .number("get_gbps", r.getGbps(), 3)
                .number("raw_get_gbps", r.rawGetGbps(), 3)
                .number("put_vs_raw", r.putVsRaw(), 3)
                .number("get_vs_raw", r.getVsRaw(), 3)
                .number("single_get_gbps", r.singleGetGbps(), 3)
                .number("ranged_get_gbps", r.rangedGetGbps(), 3)
                .number("ranged_vs_single", r.rangedVsSingle(), 3)
                .number("put_cpu_s_per_gb", r.putCpuPerGb(), 3)
                .number("raw_put_cpu_s_per_gb", r.rawPutCpuPerGb(), 3)
                .number("get_cpu_s_per_gb", r.getCpuPerGb(), 3)
                .number("raw_get_cpu_s_per_gb", r.rawGetCpuPerGb(), 3)
                .number("put_cpu_vs_raw", r.putCpuVsRaw(), 3)
                .number("get_cpu_vs_raw", r.getCpuVsRaw(), 3)
                .integer("part_bytes", (long) r.partMb() << 20)
                .number("target_ratio", TARGET_RATIO, 2)
                .bool("put_meets_target", r.putVsRaw() >= TARGET_RATIO)
                .bool("get_meets_target", r.getVsRaw() >= TARGET_RATIO)
                .integer("chunks", r.chunks())
                .integer("chunk_bytes", r.chunkBytes())
                .integer("runs", r.runs())
                .string("storage", r.storage())
                .string("server", "s3proxy (org.gaul:s3proxy), filesystem blob store, loopback")
                .string("client", "AWS SDK for Java v2, Netty async client")
                .toString();
    }

    static String table(Result r) {
        return String.format(Locale.ROOT, """
                S3 tier against the raw AWS SDK client (s3proxy on loopback over %s; %d chunks of %d MiB in flight, median of %d runs)
                  put  %6.2f GB/s   raw %6.2f GB/s   %.2f of raw (target %.2f); client CPU %.3f s/GB, raw %.3f
                  get  %6.2f GB/s   raw %6.2f GB/s   %.2f of raw (target %.2f); client CPU %.3f s/GB, raw %.3f
                  get in ranged GETs of %d MiB %6.2f GB/s, one GET per object %6.2f GB/s: %.2fx""",
                r.storage(), r.chunks(), r.chunkBytes() >> 20, r.runs(),
                r.putGbps(), r.rawPutGbps(), r.putVsRaw(), TARGET_RATIO, r.putCpuPerGb(), r.rawPutCpuPerGb(),
                r.getGbps(), r.rawGetGbps(), r.getVsRaw(), TARGET_RATIO, r.getCpuPerGb(), r.rawGetCpuPerGb(),
                r.partMb(), r.rangedGetGbps(), r.singleGetGbps(), r.rangedVsSingle());
    }
}
