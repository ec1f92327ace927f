package lmcache4j.cli;

import java.io.PrintStream;
import java.util.Locale;

import lmcache4j.bench.hash.HashBench;
import lmcache4j.bench.hash.HashBench.Result;
import lmcache4j.bench.hash.HashBench.Settings;
import lmcache4j.bench.json.ReportJson;

/**
 * {@code ./lmcache4j bench hash [--json] [--tokens N] ...}: the chunk-hash benchmark
 * ({@link HashBench}) as a table, or one JSON object with {@code --json}; {@link BenchCommand}
 * dispatches here. Progress goes to stderr, the result to stdout; exit status 2 for a usage error.
 */
public final class HashBenchCommand {
    /** The ratio to raw SHA-256 the chain should reach. */
    static final double TARGET_RATIO = 0.8;

    static final String USAGE = """
            usage: ./lmcache4j bench hash [--json] [--tokens N] [--chunk-size N] [--runs N] [--warmup N]
            hash   tokens per second of the sha256_cbor prefix hash chain (CBOR encoding + SHA-256 per
                   chunk, chained) over one token sequence, and its ratio to bare SHA-256 over the same
                   CBOR bytes encoded beforehand (the limit, measured in the same process; target >= %.1f).
                   Median of the measured runs, after warmup.
              --json          print one JSON object (hash_tokens_per_s, hash_vs_raw_sha256, ...) instead of the table
              --tokens N      tokens in the sequence (default %d)
              --chunk-size N  tokens per chunk (default %d)
              --runs N        measured runs (default %d), each at least %d ms
              --warmup N      unmeasured runs first (default %d)
            """.formatted(TARGET_RATIO, Settings.DEFAULT_TOKENS, Settings.DEFAULT_CHUNK_SIZE, Settings.DEFAULT_RUNS,
            Settings.DEFAULT_MIN_RUN_NANOS / 1_000_000, Settings.DEFAULT_WARMUP);

    private HashBenchCommand() {
    }

    /** Runs {@code bench hash} with these arguments (those after {@code hash}); returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        boolean json = false;
        Settings d = Settings.defaults();
        int tokens = d.tokens();
        int chunkSize = d.chunkSize();
        int runs = d.runs();
        int warmup = d.warmup();
        long minRunNanos = d.minRunNanos();
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "-h", "--help" -> {
                        out.print(USAGE);
                        return 0;
                    }
                    case "--json" -> json = true;
                    case "--tokens" -> tokens = intArg(args, ++i, "--tokens", 1);
                    case "--chunk-size" -> chunkSize = intArg(args, ++i, "--chunk-size", 1);
                    case "--runs" -> runs = intArg(args, ++i, "--runs", 1);
                    case "--warmup" -> warmup = intArg(args, ++i, "--warmup", 0);
                    // For tests: shorter runs. Not in the usage text.
                    case "--min-run-ms" -> minRunNanos = intArg(args, ++i, "--min-run-ms", 0) * 1_000_000L;
                    default -> throw new IllegalArgumentException("unknown option '" + CliText.echo(args[i]) + "'");
                }
            }
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "bench hash", e.getMessage());
        }
        Result r = HashBench.run(new Settings(tokens, chunkSize, warmup, runs, minRunNanos, d.seed()), err);
        out.println(json ? json(r) : table(r));
        return 0;
    }

    private static int intArg(String[] args, int i, String option, int min) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        try {
            int v = Integer.parseInt(args[i]);
            if (v >= min) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + " '" + CliText.echo(args[i]) + "' must be an integer of at least " + min);
    }

    static String json(Result r) {
        return new ReportJson()
                .number("hash_tokens_per_s", r.hashTokensPerSecond(), 0)
                .number("hash_vs_raw_sha256", r.ratio(), 3)
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
                r.ratio(), TARGET_RATIO, r.ratio() >= TARGET_RATIO ? "met" : "NOT met");
    }
}
