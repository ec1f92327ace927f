package lmcache4j.bench.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Locale;
import java.util.logging.Level;
import java.util.logging.Logger;

import lmcache4j.bench.demo.DemoReport;
import lmcache4j.bench.demo.ServingSimulator;
import lmcache4j.bench.demo.ServingSimulator.Settings;
import lmcache4j.bench.demo.Workload;
import lmcache4j.cuda.CudaRuntime;

/**
 * {@code ./lmcache4j demo}: lmcache4j's main job, end to end with no setup. A serving-engine
 * simulator ({@link ServingSimulator}) plays multi-turn conversations with shared system prompts
 * and repeatedly queried long documents through lookup → retrieve → compute the rest → store
 * against an engine whose CPU tier is small enough to evict, verifies every retrieved byte against
 * a deterministic KV model, and reports hits, bytes verified, mismatches and bandwidth next to
 * memcpy measured in the same process. A disk tier sits below the CPU tier by default (in a fresh
 * temporary directory deleted at the end; {@code --disk DIR} keeps its chunks in DIR, where a next
 * run recovers and serves them; {@code --no-disk} leaves it out).
 *
 * <p>Exit status 0 when every retrieved byte matched, 1 when any did not (or the run failed), 2 for
 * a usage error. The progress bar goes to stderr; the report (or JSON) to stdout.
 */
public final class DemoCommand {
    static final String USAGE = """
            usage: ./lmcache4j demo [--requests N] [--cpu-gb X] [--layers N] [--seed S]
                                    [--disk DIR | --no-disk] [--disk-gb X] [--remote URL] [--json] [--quiet]
            Serves a generated workload (shared system prompts, multi-turn conversations, long documents
            queried repeatedly) through lmcache4j's engine from a simulated serving engine with a paged KV
            cache in host memory; verifies every retrieved byte against a deterministic KV model and
            reports requests, hit rate, tokens reused, bytes verified, mismatches, store/retrieve GB/s
            and memcpy GB/s measured in the same process, CPU-tier evictions, and the disk tier's chunks
            written, read back (retrieve hits served from disk), evicted and recovered at start.
              --requests N  requests to serve (default %d)
              --cpu-gb X    the CPU tier, max_local_cpu_size in GiB (default %.1f: small enough to evict)
              --layers N    attention layers of the model (default %d; %d KV heads × %d, bf16)
              --seed S      the workload's random seed (default %d)
              --disk DIR    the disk tier's directory (created if needed, kept): a second run with the same
                            DIR recovers the chunks the first left there and serves them (default: a fresh
                            temporary directory, deleted at the end)
              --no-disk     no disk tier: the CPU tier only
              --disk-gb X   the disk tier, max_local_disk_size in GiB (default %.1f: less than the workload
                            stores, so it evicts too); O_DIRECT where the file system allows it
              --remote URL  a remote tier shared with other processes: redis://host:port (also rediss://,
                            redis-sentinel://, redis-cluster://h:p,h:p), lm://host:port (./lmcache4j
                            server) or fs:///shared/dir; a second demo
                            pointed at the same remote hits what the first stored there
              --json        print one JSON object instead of the report (no progress bar)
              --quiet       no progress bar
            Exit status: 0 when every retrieved byte matched, 1 when any did not, 2 for bad arguments.
            """.formatted(Settings.DEFAULT_REQUESTS, Settings.DEFAULT_CPU_GB, Settings.DEFAULT_LAYERS,
            Settings.DEFAULT_KV_HEADS, Settings.DEFAULT_HEAD_SIZE, Settings.DEFAULT_SEED, Settings.DEFAULT_DISK_GB);

    private DemoCommand() {
    }

    public static void main(String[] args) {
        int status = run(args, System.out, System.err);
        System.out.flush();
        if (status != 0) {
            System.exit(status);
        }
    }

    /**
     * Parsed options.
     *
     * @param disk   {@code --disk DIR}, or null
     * @param noDisk {@code --no-disk}
     */
    record Options(Settings settings, boolean json, boolean quiet, Path disk, boolean noDisk, double diskGb) {
    }

    /** Runs the demo with these arguments; returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, ServingSimulator.AfterRetrieve.NOTHING);
    }

    /** As {@link #run(String[], PrintStream, PrintStream)}, showing every retrieve's KV to {@code afterRetrieve} before it is verified. */
    static int run(String[] args, PrintStream out, PrintStream err, ServingSimulator.AfterRetrieve afterRetrieve) {
        Options options;
        try {
            options = parse(args);
        } catch (HelpRequested h) {
            out.print(USAGE);
            return 0;
        } catch (IllegalArgumentException e) {
            err.println("lmcache4j demo: " + e.getMessage());
            err.print(USAGE);
            return 2;
        }
        Path temporaryDisk = null;
        Settings s = options.settings();
        try {
            if (options.disk() != null) {
                Files.createDirectories(options.disk());
                s = s.withDisk(options.disk(), options.diskGb());
            } else if (!options.noDisk()) {
                temporaryDisk = Files.createTempDirectory("lmcache4j-demo-disk-");
                s = s.withDisk(temporaryDisk, options.diskGb());
            }
        } catch (IOException | IllegalArgumentException e) {
            err.println("lmcache4j demo: " + (e instanceof IOException ? "cannot create the disk tier's directory: " : "") + e.getMessage());
            deleteQuietly(temporaryDisk, err);
            return 2;
        }
        try {
            return serve(s, options, out, err, afterRetrieve);
        } finally {
            deleteQuietly(temporaryDisk, err);
        }
    }

    private static int serve(Settings s, Options options, PrintStream out, PrintStream err,
                             ServingSimulator.AfterRetrieve afterRetrieve) {
        boolean bar = !options.quiet() && !options.json();
        DemoReport report;
        // The engine logs its start at INFO; the demo prints the same facts in its header, so only
        // warnings and errors of lmcache4j's loggers get through while it runs.
        Logger lmcacheLogs = Logger.getLogger("lmcache4j");
        Level previousLevel = lmcacheLogs.getLevel();
        lmcacheLogs.setLevel(Level.WARNING);
        try (ServingSimulator simulator = new ServingSimulator(s, afterRetrieve)) {
            if (!options.json()) {
                out.println("== lmcache4j demo: a serving engine's prefix cache, end to end ==");
                out.println(machine());
                out.println(DemoReport.describe(s, simulator.pagedCache().numBlocks(), simulator.pagedBytes()));
                out.println();
                out.flush();
            }
            ProgressBar progress = new ProgressBar(err, bar);
            report = simulator.run(progress);
            progress.finish();
        } catch (RuntimeException e) {
            err.println();
            err.println("lmcache4j demo: FAILED: " + e);
            e.printStackTrace(err);
            return 1;
        } finally {
            lmcacheLogs.setLevel(previousLevel);
        }
        out.print(options.json() ? report.json() + System.lineSeparator() : report.text());
        out.flush();
        if (!report.passed()) {
            err.println("lmcache4j demo: FAILED: " + report.mismatchingBytes() + " mismatching bytes and "
                    + report.disagreements() + " lookup/retrieve disagreements; the engine returned wrong KV");
            return 1;
        }
        return 0;
    }

    /** Deletes the temporary disk directory and its chunk files (no subdirectories are made there). */
    private static void deleteQuietly(Path dir, PrintStream err) {
        if (dir == null) {
            return;
        }
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> {
                try {
                    Files.deleteIfExists(f);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException | UncheckedIOException e) {
            err.println("lmcache4j demo: could not delete the temporary disk directory " + dir + ": " + e.getMessage());
        }
    }

    /** Two lines of the machine report: the JDK and the CUDA runtime. */
    static String machine() {
        Runtime.Version v = Runtime.version();
        return String.format(Locale.ROOT, "machine    JDK %s (%s), %d CPUs%ncuda       %s",
                v, System.getProperty("java.vm.vendor"), Runtime.getRuntime().availableProcessors(),
                MachineReport.describe(CudaRuntime.load()));
    }

    private static final class HelpRequested extends RuntimeException {
        private static final long serialVersionUID = 1L;

        HelpRequested() {
            super(null, null, false, false);
        }
    }

    static Options parse(String[] args) {
        int requests = Settings.DEFAULT_REQUESTS;
        double cpuGb = Settings.DEFAULT_CPU_GB;
        int layers = Settings.DEFAULT_LAYERS;
        long seed = Settings.DEFAULT_SEED;
        boolean json = false;
        boolean quiet = false;
        Path disk = null;
        boolean noDisk = false;
        double diskGb = Settings.DEFAULT_DISK_GB;
        String remote = null;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            CliFlag flag = CliFlag.of(arg);
            String name = flag.name();
            String value = flag.value();
            switch (name) {
                case "-h", "--help" -> throw new HelpRequested();
                case "--json", "--quiet", "--no-disk" -> {
                    if (value != null) {
                        throw new IllegalArgumentException(name + " takes no value, got '" + arg + "'");
                    }
                    switch (name) {
                        case "--json" -> json = true;
                        case "--quiet" -> quiet = true;
                        default -> noDisk = true;
                    }
                }
                case "--requests", "--cpu-gb", "--layers", "--seed", "--disk", "--disk-gb", "--remote" -> {
                    if (value == null) {
                        if (i + 1 >= args.length) {
                            throw new IllegalArgumentException(name + " needs a value");
                        }
                        value = args[++i];
                    }
                    switch (name) {
                        case "--requests" -> requests = (int) whole(name, value, 1, 10_000_000);
                        case "--layers" -> layers = (int) whole(name, value, 1, 1024);
                        case "--seed" -> seed = whole(name, value, Long.MIN_VALUE, Long.MAX_VALUE);
                        case "--disk" -> {
                            if (value.isBlank()) {
                                throw new IllegalArgumentException("--disk needs a directory");
                            }
                            disk = Path.of(value);
                        }
                        case "--disk-gb" -> diskGb = decimal(name, value);
                        case "--remote" -> {
                            if (!value.contains("://")) {
                                throw new IllegalArgumentException("--remote needs a URL such as lm://127.0.0.1:65432 or "
                                        + "fs:///shared/dir, got '" + value + "'");
                            }
                            remote = value;
                        }
                        default -> cpuGb = decimal(name, value);
                    }
                }
                default -> throw new IllegalArgumentException(arg.startsWith("-") ? "unknown option '" + arg + "'"
                        : "unexpected argument '" + arg + "'");
            }
        }
        Settings s = new Settings(requests, cpuGb, layers, Settings.DEFAULT_KV_HEADS, Settings.DEFAULT_HEAD_SIZE,
                Settings.DEFAULT_BLOCK_SIZE, Settings.DEFAULT_CHUNK_SIZE, seed, Workload.Shape.defaults(seed), null, diskGb,
                remote);
        if (disk != null && noDisk) {
            throw new IllegalArgumentException("--disk and --no-disk exclude each other");
        }
        // Checks --disk-gb against the chunk size now (a usage error), before any directory is made.
        s.withDisk(Path.of("."), diskGb);
        return new Options(s, json, quiet, disk, noDisk, diskGb);
    }

    private static long whole(String option, String value, long min, long max) {
        long n;
        try {
            n = Long.parseLong(value.replace("_", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " needs a whole number, got '" + value + "'");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException(option + " must be between " + min + " and " + max + ", got " + n);
        }
        return n;
    }

    private static double decimal(String option, String value) {
        try {
            double d = Double.parseDouble(value);
            if (Double.isFinite(d) && d > 0) {
                return d;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + " needs a positive number of GiB, got '" + value + "'");
    }

    /**
     * A progress bar on stderr: one line redrawn at most ten times a second on a terminal, else a
     * line at every tenth of the way (for logs).
     */
    static final class ProgressBar implements ServingSimulator.Progress {
        private static final int WIDTH = 30;
        private final PrintStream err;
        private final boolean enabled;
        private final boolean terminal;
        private final long started = System.nanoTime();
        private long lastDraw;
        private int lastTenth;
        private boolean drawn;

        ProgressBar(PrintStream err, boolean enabled) {
            this.err = err;
            this.enabled = enabled;
            this.terminal = err == System.err && System.console() != null && System.console().isTerminal();
        }

        @Override
        public void update(int done, int total, long promptTokens, long reusedTokens) {
            if (!enabled) {
                return;
            }
            long now = System.nanoTime();
            int tenth = (int) (10L * done / total);
            if (terminal ? done < total && now - lastDraw < 100_000_000L : tenth == lastTenth) {
                return;
            }
            lastDraw = now;
            lastTenth = tenth;
            int filled = (int) ((long) WIDTH * done / total);
            err.printf(Locale.ROOT, "%s[%s%s] %3d%%  %,d/%,d requests  hit %.1f%%  %.1f s %s",
                    terminal ? "\r" : "", "#".repeat(filled), ".".repeat(WIDTH - filled), 100L * done / total, done, total,
                    promptTokens == 0 ? 0.0 : 100.0 * reusedTokens / promptTokens, (now - started) / 1e9,
                    terminal ? "" : System.lineSeparator());
            err.flush();
            drawn = terminal;
        }

        void finish() {
            if (drawn) {
                err.println();
                err.flush();
            }
        }
    }
}
