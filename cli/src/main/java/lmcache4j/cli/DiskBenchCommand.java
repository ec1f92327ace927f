package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

import lmcache4j.bench.disk.DiskBench;
import lmcache4j.bench.disk.DiskBench.Result;
import lmcache4j.bench.disk.DiskBench.Settings;
import lmcache4j.bench.json.ReportJson;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench disk [--json] [--chunks N] [--runs N] [--warmup N] [--threads N] [--dir DIR]}:
 * the disk tier's write and read bandwidth against raw O_DIRECT FileChannel transfers of the same
 * bytes ({@link DiskBench}), as a table or one JSON object; {@link BenchCommand} dispatches here.
 * Progress goes to stderr; exit status 2 for a usage error, 1 when the benchmark fails or a chunk
 * read back from the tier differs from what was written.
 */
@Command(name = "disk", description = {"the disk tier's write and read GB/s against raw O_DIRECT FileChannel transfers.",
                "Write and read of 256-token chunks of a Llama-3-8B-shaped KV (32 layers, 8 KV heads x 128, bf16, "
                + "32 MiB per chunk) through the disk tier (LocalDiskBackend: batchedSubmitPut + awaitPuts, getBlocking; and "
                + "its file layer ChunkFiles alone) against raw aligned FileChannel O_DIRECT writes and reads of the same "
                + "bytes, in the same process and directory (target >= " + DiskBenchCommand.TARGET_RATIO + " of raw). Median "
                + "of the measured runs after warmup; files are deleted after each step, so at most chunks x 32 MiB is on disk."})
public final class DiskBenchCommand implements CliMain.Command {
    /** The fraction of raw O_DIRECT the tier should reach, writing and reading. */
    static final double TARGET_RATIO = 0.8;

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object (disk_write_gbps, disk_read_gbps, raw_write_gbps, "
            + "raw_read_gbps, write_vs_raw, read_vs_raw, ...) instead of the table")
    private boolean json;

    private int chunks = Settings.DEFAULT_CHUNKS;
    @Mixin
    private BenchRuns counts = new BenchRuns(Settings.DEFAULT_RUNS, Settings.DEFAULT_WARMUP);
    private int threads = Settings.DEFAULT_THREADS;
    private Path dir;

    DiskBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--chunks", paramLabel = "N", order = 1, description = "chunks per write and read (default " + Settings.DEFAULT_CHUNKS + ")")
    private void chunks(String value) {
        chunks = OptionValues.intInRange("--chunks", value, 1, 4096);
    }



    @Option(names = "--threads", paramLabel = "N", order = 4, description = "concurrent transfers, and the tier's io_threads "
            + "(default " + Settings.DEFAULT_THREADS + ", the engine's)")
    private void threads(String value) {
        threads = OptionValues.intInRange("--threads", value, 1, 256);
    }

    @Option(names = "--dir", paramLabel = "DIR", order = 5, description = "where the files go (a temporary directory under DIR, "
            + "deleted at the end; default java.io.tmpdir)")
    private void dir(String value) {
        dir = Path.of(value);
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("--dir '" + CliText.echo(value) + "' is not a directory");
        }
    }

    @Override
    public String missingValue(String option) {
        return option + (option.equals("--dir") ? " needs a directory" : " needs a value");
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("disk", args, out, err);
    }

    @Override
    public Integer call() {
        Settings d = Settings.defaults();
        Result r;
        try {
            r = DiskBench.run(new Settings(chunks, counts.runs(), counts.warmup(), threads, dir, d.layers(), d.tokens(), d.hidden()), err);
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
