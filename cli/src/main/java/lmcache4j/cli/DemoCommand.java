package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Locale;
import java.util.Optional;
import java.util.logging.Level;
import java.util.logging.Logger;

import lmcache4j.allocator.host.HostArenas;
import lmcache4j.bench.demo.DemoReport;
import lmcache4j.bench.demo.DemoVerdict;
import lmcache4j.bench.demo.ServingSimulator;
import lmcache4j.bench.demo.ServingSimulator.Settings;
import lmcache4j.bench.demo.Workload;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.engine.config.ConfigException;
import lmcache4j.engine.remote.BadRemoteUrlException;
import lmcache4j.engine.remote.RemoteUnavailableException;
import lmcache4j.engine.storage.disk.DirectoryNotOwnedException;

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
 * <p>Exit status: 0 when every retrieved byte matched (and a {@code --remote} store worked); 1 when
 * the engine returned wrong KV, loaded less than its lookup promised, failed its own health check,
 * or the run failed; 2 for bad arguments (a malformed {@code --remote} URL, a {@code --cpu-gb}
 * beyond the machine's available memory included); 3 when {@code --remote} was given and the
 * remote stored nothing (no put acknowledged and no chunk read back) or never answered. Every
 * failure ends with one line on stderr saying why. The progress bar goes to stderr; the report
 * (or JSON) to stdout.
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
            Exit status: 0 when every retrieved byte matched (and the remote, if any, worked); 1 when the engine
            returned wrong KV (bytes differ from the model), loaded fewer tokens than its lookup promised, or
            failed its own health check, or when the run failed (one line says why); 2 for bad arguments,
            including a malformed --remote URL and a --cpu-gb larger than the machine's available memory;
            3 when --remote was given and the remote stored nothing (no put acknowledged, no chunk read
            back) or never answered.
            """.formatted(Settings.DEFAULT_REQUESTS, Settings.DEFAULT_CPU_GB, Settings.DEFAULT_LAYERS,
            Settings.DEFAULT_KV_HEADS, Settings.DEFAULT_HEAD_SIZE, Settings.DEFAULT_SEED, Settings.DEFAULT_DISK_GB);

    private DemoCommand() {
    }

    public static void main(String[] args) {
        CliMain.exit("demo", () -> run(args, System.out, System.err));
    }

    /**
     * Parsed options.
     *
     * @param disk   {@code --disk DIR}, or null
     * @param noDisk {@code --no-disk}
     */
    record Options(Settings settings, boolean json, boolean quiet, Path disk, boolean noDisk, double diskGb) {
    }

    /** Exit status: bad arguments. */
    static final int EXIT_USAGE = 2;
    /** Exit status: {@code --remote} was given and the remote stored nothing or never answered. */
    static final int EXIT_REMOTE_FAILED = DemoVerdict.Outcome.REMOTE_STORED_NOTHING.exitStatus();

    /** Runs the demo with these arguments; returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, ServingSimulator.AfterRetrieve.NOTHING);
    }

    /** As {@link #run(String[], PrintStream, PrintStream)}, showing every retrieve's KV to {@code afterRetrieve} before it is verified. */
    static int run(String[] args, PrintStream out, PrintStream err, ServingSimulator.AfterRetrieve afterRetrieve) {
        Options options;
        try {
            options = parse(args);
            requireMemoryFor(options.settings(), MachineMemory.read());
        } catch (HelpRequested h) {
            out.print(USAGE);
            return 0;
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "demo", e.getMessage());
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
            err.println("lmcache4j demo: " + (e instanceof IOException ? "cannot create the disk tier's directory: " : "")
                    + CliText.oneLine(e));
            deleteQuietly(temporaryDisk, err);
            return EXIT_USAGE;
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
            try {
                report = simulator.run(progress);
            } finally {
                progress.finish();
            }
        } catch (BadRemoteUrlException e) { // its message is whole and names no credentials: not its causes'
            return CliMain.usageError(err, "demo", "--remote: " + e.getMessage());
        } catch (ConfigException e) { // the engine's config is made of this command's arguments only
            return CliMain.usageError(err, "demo", e.getMessage());
        } catch (RemoteUnavailableException e) {
            err.println("lmcache4j demo: FAILED: the remote cannot be used: " + CliText.oneLine(e));
            return EXIT_REMOTE_FAILED;
        } catch (DirectoryNotOwnedException e) { // --disk names a directory holding someone else's files: untouched
            return CliMain.usageError(err, "demo", "--disk: " + e.getMessage()
                    .replace("Point local_disk at a new or empty directory, or set extra_config local_disk.claim_nonempty_dir: "
                            + "true to use this one anyway", "Give --disk a new or empty directory"));
        } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
            return CliMain.failure(err, "demo", "FAILED", e);
        } finally {
            lmcacheLogs.setLevel(previousLevel);
        }
        out.print(options.json() ? report.json() + System.lineSeparator() : report.text());
        out.flush();
        DemoVerdict verdict = report.verdict();
        if (!verdict.passed()) {
            err.println("lmcache4j demo: FAILED: " + CliText.escape(String.join("; ", verdict.reasons())));
        }
        return verdict.exitStatus();
    }

    /**
     * Refuses a CPU tier larger than the memory the machine has available (it is prefaulted at
     * start: it would fail, or push the machine into swap), naming both.
     */
    static void requireMemoryFor(Settings s, Optional<MachineMemory> machine) {
        long asked = (long) Math.min(Long.MAX_VALUE, s.cpuGb() * (1L << 30));
        machine.filter(m -> asked > m.availableBytes()).ifPresent(m -> {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "--cpu-gb %s asks for %s of host memory "
                    + "for the CPU tier, but this machine has %s", CliText.echo(decimalText(s.cpuGb())),
                    HostArenas.formatBytes(asked), m.describe()));
        });
    }

    private static String decimalText(double gb) {
        return gb == Math.rint(gb) && Math.abs(gb) < 1e15 ? String.valueOf((long) gb) : String.valueOf(gb);
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
                        throw new IllegalArgumentException(name + " takes no value, got '" + CliText.echo(arg) + "'");
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
                            if (value.indexOf("://") <= 0) {
                                throw new IllegalArgumentException("--remote needs a URL such as lm://127.0.0.1:65432 or "
                                        + "fs:///shared/dir, got '" + CliText.echo(value) + "'");
                            }
                            remote = value;
                        }
                        default -> cpuGb = decimal(name, value);
                    }
                }
                default -> throw new IllegalArgumentException(arg.startsWith("-")
                        ? "unknown option '" + CliText.echo(arg) + "'" : "unexpected argument '" + CliText.echo(arg) + "'");
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
            throw new IllegalArgumentException(option + " needs a whole number, got '" + CliText.echo(value) + "'");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException(option + " must be between " + min + " and " + max + ", got " + n);
        }
        return n;
    }

    /** The most GiB a size option takes: 1 PiB, far beyond any tier, well within a byte count. */
    static final double MAX_GB = 1 << 20;

    private static double decimal(String option, String value) {
        try {
            double d = Double.parseDouble(value);
            if (Double.isFinite(d) && d > 0 && d <= MAX_GB) {
                return d;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + " needs a positive number of GiB up to " + (long) MAX_GB + ", got '"
                + CliText.echo(value) + "'");
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
