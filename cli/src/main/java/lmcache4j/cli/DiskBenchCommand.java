package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Locale;

import lmcache4j.bench.disk.DiskBench;
import lmcache4j.bench.disk.DiskBench.Result;
import lmcache4j.bench.disk.DiskBench.Settings;
import lmcache4j.bench.json.ReportJson;

/**
 * {@code ./lmcache4j bench disk [--json] [--chunks N] [--runs N] [--warmup N] [--threads N] [--dir DIR]}:
 * the disk tier's write and read bandwidth against raw O_DIRECT FileChannel transfers of the same
 * bytes ({@link DiskBench}), as a table or one JSON object; {@link BenchCommand} dispatches here.
 * Progress goes to stderr; exit status 2 for a usage error, 1 when the benchmark fails or a chunk
 * read back from the tier differs from what was written.
 */
public final class DiskBenchCommand {
    /** The fraction of raw O_DIRECT the tier should reach, writing and reading. */
    static final double TARGET_RATIO = 0.8;

    static final String USAGE = """
            usage: ./lmcache4j bench disk [--json] [--chunks N] [--runs N] [--warmup N] [--threads N] [--dir DIR]
            disk    write and read of 256-token chunks of a Llama-3-8B-shaped KV (32 layers, 8 KV heads x 128,
                    bf16, 32 MiB per chunk) through the disk tier (LocalDiskBackend: batchedSubmitPut +
                    awaitPuts, getBlocking; and its file layer ChunkFiles alone) against raw aligned
                    FileChannel O_DIRECT writes and reads of the same bytes, in the same process and
                    directory (target >= %.2f of raw). Median of the measured runs after warmup; files are
                    deleted after each step, so at most chunks x 32 MiB is on disk.
              --json        print one JSON object (disk_write_gbps, disk_read_gbps, raw_write_gbps,
                            raw_read_gbps, write_vs_raw, read_vs_raw, ...) instead of the table
              --chunks N    chunks per write and read (default %d)
              --runs N      measured runs (default %d)
              --warmup N    unmeasured runs first (default %d)
              --threads N   concurrent transfers, and the tier's io_threads (default %d, the engine's)
              --dir DIR     where the files go (a temporary directory under DIR, deleted at the end;
                            default java.io.tmpdir)
            """.formatted(TARGET_RATIO, Settings.DEFAULT_CHUNKS, Settings.DEFAULT_RUNS, Settings.DEFAULT_WARMUP,
            Settings.DEFAULT_THREADS);

    private DiskBenchCommand() {
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        boolean json = false;
        Settings d = Settings.defaults();
        int chunks = d.chunks();
        int runs = d.runs();
        int warmup = d.warmup();
        int threads = d.threads();
        Path dir = null;
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "-h", "--help" -> {
                        out.print(USAGE);
                        return 0;
                    }
                    case "--json" -> json = true;
                    case "--chunks" -> chunks = StoreBenchCommand.intArg(args, ++i, "--chunks", 1, 4096);
                    case "--runs" -> runs = StoreBenchCommand.intArg(args, ++i, "--runs", 1, 1000);
                    case "--warmup" -> warmup = StoreBenchCommand.intArg(args, ++i, "--warmup", 0, 1000);
                    case "--threads" -> threads = StoreBenchCommand.intArg(args, ++i, "--threads", 1, 256);
                    case "--dir" -> {
                        if (++i >= args.length) {
                            throw new IllegalArgumentException("--dir needs a directory");
                        }
                        dir = Path.of(args[i]);
                        if (!java.nio.file.Files.isDirectory(dir)) {
                            throw new IllegalArgumentException("--dir '" + CliText.echo(args[i]) + "' is not a directory");
                        }
                    }
                    default -> throw new IllegalArgumentException("unknown option '" + CliText.echo(args[i]) + "'");
                }
            }
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "bench disk", e.getMessage());
        }
        Result r;
        try {
            r = DiskBench.run(new Settings(chunks, runs, warmup, threads, dir, d.layers(), d.tokens(), d.hidden()), err);
        } catch (RuntimeException e) {
            return CliMain.failure(err, "bench disk", "the benchmark failed", e);
        }
        out.println(json ? json(r) : table(r));
        if (r.mismatches() != 0) {
            err.println("lmcache4j bench disk: FAILED: " + r.mismatches() + " chunks read back from the tier differ from those written");
            return 1;
        }
        return 0;
    }

    static String table(Result r) {
        Settings s = r.settings();
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "disk bench: %d chunks x %d MiB (256 tokens, Llama-3-8B shape), %d threads, "
                + "median of %d runs after %d warmup%n", s.chunks(), s.chunkBytes() >> 20, s.threads(), s.runs(), s.warmup()));
        sb.append("directory  ").append(r.directory()).append(" (deleted)\n");
        sb.append("I/O        ").append(r.ioDescription()).append(r.directIo() ? ""
                : "\n           (buffered: reads may come from the page cache, the figures are not the device's)").append('\n');
        sb.append(String.format(Locale.ROOT, "%-34s %10s %10s%n", "GB/s (10^9 B/s)", "write", "read"));
        row(sb, "raw FileChannel " + (r.directIo() ? "O_DIRECT" : "buffered"), r.rawWriteGbps(), r.rawReadGbps());
        row(sb, "ChunkFiles (file layer)", r.filesWriteGbps(), r.filesReadGbps());
        row(sb, "LocalDiskBackend (the tier)", r.tierWriteGbps(), r.tierReadGbps());
        sb.append(String.format(Locale.ROOT, "%-34s %10.2f %10.2f   (target >= %.2f)%n", "tier / raw", r.tierWriteGbps() / r.rawWriteGbps(),
                r.tierReadGbps() / r.rawReadGbps(), TARGET_RATIO));
        sb.append(String.format(Locale.ROOT, "%-34s %10.2f %10.2f%n", "file layer / raw", r.filesWriteGbps() / r.rawWriteGbps(),
                r.filesReadGbps() / r.rawReadGbps()));
        sb.append(String.format(Locale.ROOT, "verified   %d chunks read back from the tier: %d differ", s.chunks(), r.mismatches()));
        return sb.toString();
    }

    private static void row(StringBuilder sb, String label, double write, double read) {
        sb.append(String.format(Locale.ROOT, "%-34s %10.2f %10.2f%n", label, write, read));
    }

    static String json(Result r) {
        Settings s = r.settings();
        ReportJson j = new ReportJson();
        j.number("disk_write_gbps", r.tierWriteGbps(), 3);
        j.number("disk_read_gbps", r.tierReadGbps(), 3);
        j.number("raw_write_gbps", r.rawWriteGbps(), 3);
        j.number("raw_read_gbps", r.rawReadGbps(), 3);
        j.number("write_vs_raw", r.tierWriteGbps() / r.rawWriteGbps(), 3);
        j.number("read_vs_raw", r.tierReadGbps() / r.rawReadGbps(), 3);
        j.number("files_write_gbps", r.filesWriteGbps(), 3);
        j.number("files_read_gbps", r.filesReadGbps(), 3);
        j.number("files_write_vs_raw", r.filesWriteGbps() / r.rawWriteGbps(), 3);
        j.number("files_read_vs_raw", r.filesReadGbps() / r.rawReadGbps(), 3);
        j.number("target_ratio", TARGET_RATIO, 2);
        j.bool("direct_io", r.directIo());
        j.string("io", r.ioDescription());
        j.integer("chunks", s.chunks());
        j.integer("chunk_bytes", s.chunkBytes());
        j.integer("threads", s.threads());
        j.integer("runs", s.runs());
        j.integer("warmup", s.warmup());
        j.integer("mismatching_chunks", r.mismatches());
        j.numbers("raw_write_runs_gbps", r.rawWrite(), 3);
        j.numbers("raw_read_runs_gbps", r.rawRead(), 3);
        j.numbers("disk_write_runs_gbps", r.tierWrite(), 3);
        j.numbers("disk_read_runs_gbps", r.tierRead(), 3);
        j.string("method", "disk_*: LocalDiskBackend (write = batchedSubmitPut of every chunk + awaitPuts, its io_threads = "
                + "threads; read = getBlocking of every chunk from threads callers, allocating in a CPU tier); files_*: "
                + "ChunkFiles.write/readPayload (4 KiB header with CRC32C, temp file + rename; header check + CRC32C on read); "
                + "raw_*: FileChannel O_DIRECT write/read of the same payload bytes from/to 4 KiB-aligned off-heap memory, "
                + "one file per chunk, same directory and threads; payload bytes / wall time, median of runs; no fsync");
        return j.toString();
    }
}
