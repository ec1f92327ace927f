package lmcache4j.cli;

import java.io.PrintStream;
import java.util.Locale;

import lmcache4j.bench.hash.HashBench;
import lmcache4j.bench.hash.HashBench.Result;
import lmcache4j.bench.hash.HashBench.Settings;
import lmcache4j.bench.json.ReportJson;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench hash [--json] [--tokens N] ...}: the chunk-hash benchmark
 * ({@link HashBench}) as a table, or one JSON object with {@code --json}; {@link BenchCommand}
 * dispatches here. Progress goes to stderr, the result to stdout; exit status 2 for a usage error.
 */
@Command(name = "hash", description = {"the sha256_cbor prefix hash chain's tokens per second against bare SHA-256.",
                "Tokens per second of the sha256_cbor prefix hash chain (CBOR encoding + SHA-256 per chunk, chained) "
                + "over one token sequence, and its ratio to bare SHA-256 over the same CBOR bytes encoded beforehand (the "
                + "limit, measured in the same process; target >= " + HashBenchCommand.TARGET_RATIO + "). Median of the "
                + "measured runs, after warmup."})
public final class HashBenchCommand implements CliMain.Command {
    /** The ratio to raw SHA-256 the chain should reach. */
    static final double TARGET_RATIO = 0.8;

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0,
            description = "print one JSON object (hash_tokens_per_s, hash_vs_raw_sha256, ...) instead of the table")
    private boolean json;

    private int tokens = Settings.DEFAULT_TOKENS;
    private int chunkSize = Settings.DEFAULT_CHUNK_SIZE;
    @Mixin
    private BenchRuns counts = new BenchRuns(Settings.DEFAULT_RUNS, Settings.DEFAULT_WARMUP);
    private long minRunNanos = Settings.DEFAULT_MIN_RUN_NANOS;

    HashBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--tokens", paramLabel = "N", order = 1, description = "tokens in the sequence (default " + Settings.DEFAULT_TOKENS + ")")
    private void tokens(String value) {
        tokens = OptionValues.intAtLeast("--tokens", value, 1);
    }

    @Option(names = "--chunk-size", paramLabel = "N", order = 2, description = "tokens per chunk (default " + Settings.DEFAULT_CHUNK_SIZE + ")")
    private void chunkSize(String value) {
        chunkSize = OptionValues.intAtLeast("--chunk-size", value, 1);
    }



    @Option(names = "--min-run-ms", hidden = true) // for tests: shorter runs
    private void minRunMs(String value) {
        minRunNanos = OptionValues.intAtLeast("--min-run-ms", value, 0) * 1_000_000L;
    }

    /** Runs {@code bench hash} with these arguments (those after {@code hash}); returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("hash", args, out, err);
    }

    @Override
    public Integer call() {
        Result r = HashBench.run(new Settings(tokens, chunkSize, counts.warmup(), counts.runs(), minRunNanos, Settings.defaults().seed()), err);
        out.println(json ? json(r) : table(r));
        return 0;
    }

    static String json(Result r) {
        return new ReportJson()
                .number("hash_tokens_per_s", r.hashTokensPerSecond(), 0)
                .number("hash_vs_raw_sha256", r.ratio(), 3)
                .number("int_chain_tokens_per_s", r.intTokensPerSecond(), 0)
                .number("int_chain_vs_raw_sha256", r.intRatio(), 3)
                .number("raw_sha256_tokens_per_s", r.rawTokensPerSecond(), 0)
                .number("raw_sha256_bytes_per_s", r.rawBytesPerSecond(), 0)
                .number("target_ratio", TARGET_RATIO, 1)
                .integer("tokens", r.settings().tokens())
                .integer("chunk_size", r.settings().chunkSize())
                .integer("chunks", r.chunks())
                .integer("cbor_bytes", r.cborBytes())
                .integer("runs", r.settings().runs())
                .integer("warmup", r.settings().warmup())
                .toString();
    }

    static String table(Result r) {
        return String.format(Locale.ROOT, """
                        chunk hash chain (sha256_cbor): %d tokens, %d chunks of %d, %d CBOR bytes; median of %d runs
                          hash chain (CBOR + SHA-256, chained)  %8.2f M tokens/s
                          raw SHA-256 of the same bytes         %8.2f M tokens/s  (%.0f MB/s)
                          ratio                                 %8.3f            (target >= %.1f: %s)""",
                r.settings().tokens(), r.chunks(), r.settings().chunkSize(), r.cborBytes(), r.settings().runs(),
                r.hashTokensPerSecond() / 1e6, r.rawTokensPerSecond() / 1e6, r.rawBytesPerSecond() / 1e6,
                r.ratio(), TARGET_RATIO, r.ratio() >= TARGET_RATIO ? "met" : "missed");
    }
}
