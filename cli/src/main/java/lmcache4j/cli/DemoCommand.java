package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import lmcache4j.allocator.host.HostArenas;
import lmcache4j.bench.demo.DemoReport;
import lmcache4j.bench.demo.DemoVerdict;
import lmcache4j.bench.demo.ServingSimulator;
import lmcache4j.bench.demo.ServingSimulator.Settings;
import lmcache4j.bench.demo.Workload;
import lmcache4j.bench.demo.cluster.ClusterDemo;
import lmcache4j.bench.demo.cluster.ClusterReport;
import lmcache4j.bench.demo.cluster.ClusterSettings;
import lmcache4j.bench.demo.cluster.Policy;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.engine.config.ConfigException;
import lmcache4j.engine.remote.BadRemoteUrlException;
import lmcache4j.engine.remote.RemoteUnavailableException;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.storage.disk.DirectoryNotOwnedException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

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
 * remote stored nothing (no put acknowledged and no chunk read back) or never answered; 4 when
 * {@code --controller} was given and the controller never acknowledged the engine's registration. With
 * {@code --instances N} the demo runs a cluster instead ({@link ClusterDemo}) and exits 1 when its report fails. Every
 * failure ends with one line on stderr saying why. The progress bar goes to stderr; the report
 * (or JSON) to stdout.
 */
@Command(name = "demo", description = {
        "Serves a generated workload (shared system prompts, multi-turn conversations, long documents queried repeatedly) "
                + "through lmcache4j's engine from a simulated serving engine with a paged KV cache in host memory; verifies "
                + "every retrieved byte against a deterministic KV model and reports requests, hit rate, tokens reused, bytes "
                + "verified, mismatches, store/retrieve GB/s and memcpy GB/s measured in the same process, CPU-tier evictions, "
                + "and the disk tier's chunks written, read back (retrieve hits served from disk), evicted and recovered at start."},
        footer = {"Exit status: 0 when every retrieved byte matched (and the remote, if any, worked); 1 when the engine returned "
                + "wrong KV (bytes differ from the model), loaded fewer tokens than its lookup promised, or failed its own health "
                + "check, or when the run failed (one line says why); 2 for bad arguments, including a malformed --remote URL and "
                + "a --cpu-gb larger than the machine's available memory; 3 when --remote was given and the remote stored nothing "
                + "(no put acknowledged, no chunk read back) or never answered; 4 when --controller was given and the controller "
                + "never acknowledged the engine's registration. With --instances: 0 when all three policies verified every byte; 1 "
                + "when a byte was wrong, a retrieve fell short of its lookup, an instance leaked, died or did not close, round "
                + "robin with P2P fetched nothing from a peer, or KV-aware routing did not beat round robin."})
public final class DemoCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;
    private final ServingSimulator.AfterRetrieve afterRetrieve;

    private int requests = Settings.DEFAULT_REQUESTS;
    private double cpuGb = Settings.DEFAULT_CPU_GB;
    private int layers = Settings.DEFAULT_LAYERS;
    private long seed = Settings.DEFAULT_SEED;
    private Path disk;
    private double diskGb = Settings.DEFAULT_DISK_GB;
    private String remote;
    private String controllerPull;
    private String controllerReply;
    private String instanceId;
    private long holdSeconds;
    private Path promptOut;
    private Optional<String> secretFile = Optional.empty();

    @Option(names = "--no-disk", order = 5, description = "no disk tier: the CPU tier only")
    private boolean noDisk;

    @Option(names = "--json", order = 8, description = "print one JSON object instead of the report (no progress bar)")
    private boolean json;

    @Option(names = "--quiet", order = 9, description = "no progress bar")
    private boolean quiet;

    private Integer instances;
    private Optional<Path> model;
    private boolean layersGiven;
    private boolean requestsGiven;
    private boolean cpuGbGiven;

    @Option(names = "--instances", paramLabel = "N", arity = "0..1", fallbackValue = "" + ClusterSettings.DEFAULT_INSTANCES,
            order = 14, description = "many instances, one cache: a cache controller and N engine processes (default "
            + ClusterSettings.DEFAULT_INSTANCES + "), each with its own CPU and disk tier, lookup server and P2P transfer "
            + "server; the workload is played three times, each on fresh instances: round robin without P2P, round robin "
            + "with P2P, KV-aware routing with P2P; reports each instance's and the total hit rate, chunks fetched from "
            + "peers, prefetch hits, bytes verified and mismatches")
    private void instances(String value) {
        instances = (int) OptionValues.wholeNumber("--instances", value, 2, ClusterSettings.MAX_INSTANCES);
    }

    @Option(names = "--insecure", order = 14, description = "with --instances: the controller and the instances' control "
            + "sockets without CURVE, as a controller started with --insecure runs for LMCache's Python workers; P2P keeps "
            + "a token of its own (a fresh p2p_token), so a process that registers with the controller cannot serve forged KV")
    private boolean insecure;

    private DemoCommand(PrintStream out, PrintStream err, ServingSimulator.AfterRetrieve afterRetrieve) {
        this.out = out;
        this.err = err;
        this.afterRetrieve = afterRetrieve;
    }

    @Option(names = "--requests", paramLabel = "N", order = 0, description = "requests to serve (default " + Settings.DEFAULT_REQUESTS + ")")
    private void requests(String value) {
        requests = (int) OptionValues.wholeNumber("--requests", value, 1, 10_000_000);
        requestsGiven = true;
    }

    @Option(names = "--cpu-gb", paramLabel = "X", order = 1, description = "the CPU tier, max_local_cpu_size in GiB (default "
            + Settings.DEFAULT_CPU_GB + ": small enough to evict)")
    private void cpuGb(String value) {
        cpuGb = decimal("--cpu-gb", value);
        cpuGbGiven = true;
    }

    @Option(names = "--layers", paramLabel = "N", order = 2, description = "attention layers of the model (default "
            + Settings.DEFAULT_LAYERS + "; " + Settings.DEFAULT_KV_HEADS + " KV heads × " + Settings.DEFAULT_HEAD_SIZE + ", bf16)")
    private void layers(String value) {
        layers = (int) OptionValues.wholeNumber("--layers", value, 1, 1024);
        layersGiven = true;
    }

    @Option(names = "--model", paramLabel = "DIR", arity = "0..1", fallbackValue = "", order = 15, description = "a real "
            + "transformer instead of the KV model: Jlama runs the prefill, lmcache4j caches its KV. Without DIR, a Llama-"
            + "architecture model with seeded random weights, written on first use under ~/.cache/lmcache4j (nothing is "
            + "downloaded); with DIR, any Hugging Face model directory Jlama loads. Each request looks up, retrieves into "
            + "Jlama's KV buffer, prefills the rest, greedy-decodes, stores; every warm request is checked against the cold "
            + "path (tokens equal, logits compared). Reports time to first token per class: cold, warm from CPU, from disk, "
            + "from --remote. Takes --cpu-gb, --disk, --no-disk, --disk-gb, --remote, --seed, --json, --quiet")
    private void model(String value) {
        model = value.isEmpty() ? Optional.empty() : Optional.of(Path.of(value));
        modelGiven = true;
    }

    private boolean modelGiven;

    @Option(names = "--pd", order = 16, description = "with --model: disaggregated prefill, each part its own process: a "
            + "proxy, a prefiller that computes each prompt's KV and pushes it chunk by chunk, and a decoder that generates "
            + "from it; every request's tokens are checked against this process doing prefill and decode itself (equal "
            + "tokens, last-position logits compared); reports the positions the decoder computed and the time to first "
            + "token through PD against one process. Takes --seed, --json and --quiet (docs/pd.md)")
    private boolean pd;

    @Option(names = "--blend", order = 17, description = "with --model: CacheBlend, a retrieval workload (documents from a "
            + "pool in a new order per request, a new question) served by full prefill, prefix caching and blending at recompute "
            + "ratio 0.15; passes when blending at ratio 1 gives every request's full-prefill logits bit for bit and blending is "
            + "faster than full prefills. Takes --seed, --json and --quiet (docs/blend.md)")
    private boolean blend;

    @Option(names = "--seed", paramLabel = "S", order = 3, description = "the workload's random seed (default " + Settings.DEFAULT_SEED + ")")
    private void seed(String value) {
        seed = OptionValues.wholeNumber("--seed", value, Long.MIN_VALUE, Long.MAX_VALUE);
    }

    @Option(names = "--disk", paramLabel = "DIR", order = 4, description = "the disk tier's directory (created if needed, kept): "
            + "a second run with the same DIR recovers the chunks the first left there and serves them (default: a fresh "
            + "temporary directory, deleted at the end)")
    private void disk(String value) {
        if (value.isBlank()) {
            throw new IllegalArgumentException("--disk needs a directory");
        }
        disk = Path.of(value);
    }

    @Option(names = "--disk-gb", paramLabel = "X", order = 6, description = "the disk tier, max_local_disk_size in GiB (default "
            + Settings.DEFAULT_DISK_GB + ": less than the workload stores, so it evicts too); O_DIRECT where the file system allows it")
    private void diskGb(String value) {
        diskGb = decimal("--disk-gb", value);
    }

    @Option(names = "--remote", paramLabel = "URL", order = 7, description = "a remote tier shared with other processes: "
            + "redis://host:port (also rediss://, redis-sentinel://, redis-cluster://h:p,h:p), lm://host:port (./lmcache4j "
            + "server), fs:///shared/dir or s3://BUCKET / s3://HOST:PORT/BUCKET?disable_tls=true (./lmcache4j s3-server; "
            + "credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); a second demo pointed at the same remote hits "
            + "what the first stored there")
    private void remote(String value) {
        if (value.indexOf("://") <= 0) {
            throw new IllegalArgumentException("--remote needs a URL such as lm://127.0.0.1:65432 or "
                    + "fs:///shared/dir, got '" + CliText.echo(value) + "'");
        }
        remote = value;
    }

    @Option(names = "--controller", paramLabel = "PULL,REPLY", order = 10, description = "report this engine's chunks to a "
            + "cache controller (./lmcache4j controller): HOST:PORT of its PULL socket and of its reply (ROUTER) socket, as "
            + "LMCache's controller_pull_url and controller_reply_url, for example 127.0.0.1:8300,127.0.0.1:8400")
    private void controller(String value) {
        String[] parts = value.split(",", -1);
        if (parts.length != 2 || parts[0].isBlank() || parts[1].isBlank()) {
            throw new IllegalArgumentException("--controller needs PULL,REPLY addresses such as 127.0.0.1:8300,127.0.0.1:8400, "
                    + "got '" + CliText.echo(value) + "'");
        }
        controllerPull = parts[0].trim();
        controllerReply = parts[1].trim();
    }

    @Option(names = "--instance-id", paramLabel = "ID", order = 11, description = "the instance id this engine registers "
            + "with the controller (lmcache_instance_id; default demo-<pid>)")
    private void instanceId(String value) {
        if (value.isBlank() || value.length() > 200) {
            throw new IllegalArgumentException("--instance-id needs 1-200 characters");
        }
        instanceId = value;
    }

    @Option(names = "--hold", paramLabel = "SECONDS", order = 12, description = "after the report, keep the engine (and "
            + "its registration with the controller) up this long, so a router can look up what it holds (default 0)")
    private void hold(String value) {
        holdSeconds = OptionValues.wholeNumber("--hold", value, 0, 86_400);
    }

    private String kvEvents;

    @Option(names = "--kv-events", paramLabel = "ENDPOINT", order = 14, description = "publish the engine's KV events in "
            + "vLLM's format (KVEventBatch over ZeroMQ PUB) at ENDPOINT, as kv_events_endpoint: bound when it holds * (e.g. "
            + "tcp://*:5557), else connected to a subscriber that bound it")
    private void kvEvents(String value) {
        if (!value.matches("(tcp|ipc|inproc)://\\S+")) {
            throw new IllegalArgumentException("--kv-events needs a ZeroMQ endpoint such as tcp://*:5557, got '"
                    + CliText.echo(value) + "'");
        }
        kvEvents = value;
    }

    @Option(names = "--secret-file", paramLabel = "FILE", order = 12, description = "the deployment secret of a controller "
            + "started with --secret-file (default: $" + DeploymentSecret.FILE_ENV + "): the engine's controller sockets "
            + "use CURVE (deployment_secret_file)")
    private void secretFile(String value) {
        secretFile = Optional.of(value);
    }

    @Option(names = "--prompt-out", paramLabel = "FILE", order = 13, description = "after the report, write {\"tokens\": "
            + "[...]} of the last prompt served (its chunks were stored last) to FILE: the body of a controller /lookup")
    private void promptOut(String value) {
        if (value.isBlank()) {
            throw new IllegalArgumentException("--prompt-out needs a file name");
        }
        // Checked now, not after the whole run: the file is written at the end.
        Path dir = Path.of(value).toAbsolutePath().getParent();
        if (dir == null || !Files.isDirectory(dir)) {
            throw new IllegalArgumentException("--prompt-out " + CliText.echo(value) + ": the directory " + dir
                    + " does not exist; create it first or name a file in an existing one");
        }
        if (Files.isDirectory(Path.of(value))) {
            throw new IllegalArgumentException("--prompt-out " + CliText.echo(value) + " is a directory; name a file");
        }
        if (!Files.isWritable(dir)) {
            throw new IllegalArgumentException("--prompt-out " + CliText.echo(value) + ": the directory " + dir
                    + " is not writable");
        }
        promptOut = Path.of(value);
    }

    private ServingSimulator.ControllerLink controllerLink() {
        if (controllerPull == null) {
            if (instanceId != null || secretFile.isPresent()) {
                throw new IllegalArgumentException((instanceId != null ? "--instance-id" : "--secret-file") + " needs --controller");
            }
            return null;
        }
        Optional<String> secret = secretFile.or(() -> Optional.ofNullable(System.getenv(DeploymentSecret.FILE_ENV))
                .filter(f -> !f.isBlank()));
        secret.ifPresent(f -> DeploymentSecret.fromFile(Path.of(f))); // a bad file is a usage error, before the run
        return new ServingSimulator.ControllerLink(controllerPull, controllerReply,
                instanceId != null ? instanceId : "demo-" + ProcessHandle.current().pid(), secret);
    }

    public static void main(String[] args) {
        CliMain.exit("demo", () -> run(args, System.out, System.err));
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
        return CliMain.execute(new CommandLine(new DemoCommand(out, err, afterRetrieve)), out, err, args);
    }

    @Override
    public Integer call() {
        if (modelGiven) {
            return modelDemo();
        }
        if (pd) {
            return CliMain.usageError(err, "demo", "--pd needs --model: disaggregated prefill runs a real transformer "
                    + "(./lmcache4j demo --model --pd)");
        }
        if (blend) {
            return CliMain.usageError(err, "demo", "--blend needs --model: blending runs a real transformer "
                    + "(./lmcache4j demo --model --blend)");
        }
        if (instances != null) {
            return cluster();
        }
        if (insecure) {
            return CliMain.usageError(err, "demo", "--insecure needs --instances: the single demo starts no controller (with "
                    + "--controller it reports to one, which decides whether CURVE is used)");
        }
        Settings s;
        try {
            s = new Settings(requests, cpuGb, layers, Settings.DEFAULT_KV_HEADS, Settings.DEFAULT_HEAD_SIZE,
                    Settings.DEFAULT_BLOCK_SIZE, Settings.DEFAULT_CHUNK_SIZE, seed, Workload.Shape.defaults(seed), null, diskGb,
                    remote, controllerLink());
            if (disk != null && noDisk) {
                throw new IllegalArgumentException("--disk and --no-disk exclude each other");
            }
            // Checks --disk-gb against the chunk size now (a usage error), before any directory is made.
            s.withDisk(Path.of("."), diskGb);
            requireMemoryFor(s, MachineMemory.read());
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "demo", e.getMessage());
        }
        TemporaryDirectory temporaryDisk = null;
        try {
            if (disk != null) {
                Files.createDirectories(disk);
                s = s.withDisk(disk, diskGb);
            } else if (!noDisk) {
                temporaryDisk = TemporaryDirectory.create("lmcache4j-demo-disk-", err, "lmcache4j demo");
                s = s.withDisk(temporaryDisk.path(), diskGb);
            }
        } catch (IOException | IllegalArgumentException e) {
            err.println("lmcache4j demo: " + (e instanceof IOException ? "cannot create the disk tier's directory: " : "")
                    + CliText.oneLine(e));
            if (temporaryDisk != null) {
                temporaryDisk.close();
            }
            return EXIT_USAGE;
        }
        try {
            return serve(s);
        } finally {
            if (temporaryDisk != null) {
                temporaryDisk.close(); // also on SIGTERM or Ctrl-C, through its shutdown hook
            }
        }
    }

    /** {@code demo --model}: the workload on a real transformer (Jlama). */
    private int modelDemo() {
        if (blend) {
            if (pd || instances != null || controllerPull != null || instanceId != null || holdSeconds != 0 || promptOut != null
                    || layersGiven || requestsGiven || cpuGbGiven || disk != null || noDisk || remote != null) {
                return CliMain.usageError(err, "demo", "--model --blend takes --seed, --json and --quiet only");
            }
            return ModelRuns.blendDemo(model, seed, json, quiet, out, err);
        }
        if (pd) {
            if (instances != null || controllerPull != null || instanceId != null || holdSeconds != 0 || promptOut != null
                    || layersGiven || requestsGiven || cpuGbGiven || disk != null || noDisk || remote != null) {
                return CliMain.usageError(err, "demo", "--model --pd takes --seed, --json and --quiet only: the roles' "
                        + "tiers are the PD buffer (docs/pd.md)");
            }
            return ModelRuns.pdDemo(model, seed, json, quiet, out, err);
        }
        if (instances != null || controllerPull != null || instanceId != null || holdSeconds != 0 || promptOut != null
                || layersGiven || requestsGiven) {
            return CliMain.usageError(err, "demo", "--model takes --cpu-gb, --disk, --no-disk, --disk-gb, --remote, --seed, "
                    + "--json and --quiet; not --instances, --controller, --instance-id, --hold, --prompt-out, --layers or --requests");
        }
        if (disk != null && noDisk) {
            return CliMain.usageError(err, "demo", "--disk and --no-disk exclude each other");
        }
        double modelCpuGb = cpuGbGiven ? cpuGb : 1.0;
        if (!(modelCpuGb > 0) || !(diskGb > 0)) {
            return CliMain.usageError(err, "demo", "--cpu-gb and --disk-gb must be positive");
        }
        if (disk != null) {
            try {
                Files.createDirectories(disk);
            } catch (IOException e) {
                err.println("lmcache4j demo: cannot create the disk tier's directory: " + CliText.oneLine(e));
                return EXIT_USAGE;
            }
        }
        lmcache4j.bench.model.ModelDemo.Settings s = new lmcache4j.bench.model.ModelDemo.Settings(modelCpuGb,
                Optional.ofNullable(disk), noDisk ? 0 : diskGb, Optional.ofNullable(remote), seed, 8, ModelRuns.shape());
        return ModelRuns.demo(model, s, json, quiet, out, err);
    }

    private int serve(Settings s) {
        boolean bar = !quiet && !json;
        DemoReport report;
        boolean reportPrinted = false;
        CountDownLatch engineClosed = new CountDownLatch(1);
        // The engine logs its start at INFO; the demo prints the same facts in its header, so only
        // warnings and errors of lmcache4j's loggers get through while it runs.
        Logger lmcacheLogs = Logger.getLogger("lmcache4j");
        Level previousLevel = lmcacheLogs.getLevel();
        lmcacheLogs.setLevel(Level.WARNING);
        try (ServingSimulator simulator = new ServingSimulator(s, afterRetrieve, builder -> {
            if (kvEvents != null) {
                builder.set("kv_events_endpoint", kvEvents);
            }
        })) {
            if (!json) {
                out.println("== lmcache4j demo: a serving engine's prefix cache, end to end ==");
                out.println(machine());
                out.println(DemoReport.describe(s, simulator.pagedCache().numBlocks(), simulator.pagedBytes(), simulator.copies()));
                out.println();
                out.flush();
            }
            ProgressBar progress = new ProgressBar(err, bar);
            try {
                report = simulator.run(progress);
            } finally {
                progress.finish();
            }
            if (promptOut != null) {
                writePrompt(simulator.lastPrompt());
            }
            if (holdSeconds > 0) {
                // The report first: whoever waits for this engine reads what it cached while it is still up.
                out.print(json ? report.json() + System.lineSeparator() : report.text());
                out.flush();
                err.println("lmcache4j demo: holding the engine " + holdSeconds + " s"
                        + (s.controller() != null ? " (registered with the controller as " + s.controller().instanceId() + ")" : ""));
                err.flush();
                reportPrinted = true;
                hold(holdSeconds, engineClosed);
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
        } catch (IOException e) {
            return CliMain.failure(err, "demo", "FAILED: cannot write --prompt-out " + promptOut, e);
        } catch (CancellationException e) { // SIGTERM or Ctrl-C: the run stops between requests, the engine closes
            err.println("lmcache4j demo: " + e.getMessage());
            return 1;
        } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
            return CliMain.failure(err, "demo", "FAILED", e);
        } finally {
            engineClosed.countDown(); // the engine has closed (and left the controller): a waiting shutdown hook may go
            lmcacheLogs.setLevel(previousLevel);
        }
        if (!reportPrinted) {
            out.print(json ? report.json() + System.lineSeparator() : report.text());
            out.flush();
        }
        DemoVerdict verdict = report.verdict();
        if (!verdict.passed()) {
            err.println("lmcache4j demo: FAILED: " + CliText.escape(String.join("; ", verdict.reasons())));
        }
        return verdict.exitStatus();
    }

    /** Requests a policy plays with {@code --instances} unless {@code --requests} says: three policies run in turn. */
    static final int CLUSTER_REQUESTS = 120;
    /** Each instance's CPU tier with {@code --instances} unless {@code --cpu-gb} says. */
    static final double CLUSTER_CPU_GB = 0.5;

    /** The options {@code --instances} does not take that were given. */
    private List<String> clusterExcludedOptions() {
        List<String> excluded = new ArrayList<>();
        if (disk != null) {
            excluded.add("--disk");
        }
        if (noDisk) {
            excluded.add("--no-disk");
        }
        if (remote != null) {
            excluded.add("--remote");
        }
        if (controllerPull != null) {
            excluded.add("--controller");
        }
        if (instanceId != null) {
            excluded.add("--instance-id");
        }
        if (secretFile.isPresent()) {
            excluded.add("--secret-file (it makes its own)");
        }
        if (holdSeconds > 0) {
            excluded.add("--hold");
        }
        if (promptOut != null) {
            excluded.add("--prompt-out");
        }
        return excluded;
    }

    /** Runs the policies in turn with a progress bar each; the engines' INFO logs are quiet, as in the single demo. */
    private ClusterReport runCluster(ClusterSettings cs) throws IOException {
        Logger lmcacheLogs = Logger.getLogger("lmcache4j");
        Level previousLevel = lmcacheLogs.getLevel();
        lmcacheLogs.setLevel(Level.WARNING);
        ProgressBar[] bar = new ProgressBar[1];
        Policy[] current = new Policy[1];
        try {
            return new ClusterDemo(cs).run((policy, done, total, prompt, reused) -> {
                if (policy != current[0]) {
                    if (bar[0] != null) {
                        bar[0].finish();
                    }
                    if (!quiet && !json) {
                        err.println(policy.title() + ": " + cs.instances() + " instances");
                    }
                    bar[0] = new ProgressBar(err, !quiet && !json);
                    current[0] = policy;
                }
                bar[0].update(done, total, prompt, reused);
            });
        } finally {
            if (bar[0] != null) {
                bar[0].finish();
            }
            lmcacheLogs.setLevel(previousLevel);
        }
    }

    /** {@code --instances}: the multi-instance demo. */
    private int cluster() {
        List<String> excluded = clusterExcludedOptions();
        if (!excluded.isEmpty()) {
            return CliMain.usageError(err, "demo", "--instances starts its own controller and instances, each with a "
                    + "temporary disk tier; it does not take " + String.join(", ", excluded));
        }
        TemporaryDirectory workDir;
        try {
            workDir = TemporaryDirectory.create("lmcache4j-demo-instances-", err, "lmcache4j demo");
        } catch (IOException e) {
            return CliMain.failure(err, "demo", "FAILED: cannot create a temporary directory", e);
        }
        Path work = workDir.path();
        try {
            ClusterSettings cs;
            try {
                cs = new ClusterSettings(instances, requestsGiven ? requests : CLUSTER_REQUESTS,
                        cpuGbGiven ? cpuGb : CLUSTER_CPU_GB, diskGb, layers, seed, work, insecure);
                Settings one = new Settings(1, cs.cpuGb() * cs.instances(), layers, Settings.DEFAULT_KV_HEADS,
                        Settings.DEFAULT_HEAD_SIZE, Settings.DEFAULT_BLOCK_SIZE, Settings.DEFAULT_CHUNK_SIZE, seed,
                        Workload.Shape.defaults(seed), null, diskGb, null, null);
                requireMemoryFor(one, MachineMemory.read()); // the instances' CPU tiers together
            } catch (IllegalArgumentException e) {
                return CliMain.usageError(err, "demo", e.getMessage());
            }
            if (!json) {
                out.println("== lmcache4j demo --instances: many instances, one cache ==");
                out.println(machine());
                out.flush();
            }
            ClusterReport report = runCluster(cs);
            out.print(json ? report.json() + System.lineSeparator() : System.lineSeparator() + report.text());
            out.flush();
            if (!report.passed()) {
                err.println("lmcache4j demo: FAILED: " + CliText.escape(String.join("; ", report.failures())));
                return 1;
            }
            return 0;
        } catch (IOException | RuntimeException e) {
            return CliMain.failure(err, "demo", "FAILED", e);
        } finally {
            workDir.close(); // the instances' disk tiers and logs
        }
    }

    /**
     * Sleeps {@code seconds}, or less when the process is told to stop (SIGTERM, Ctrl-C): a shutdown hook then cuts the
     * hold short and waits (at most 10 s) for the engine to close, so that it deregisters from the controller instead
     * of leaving its entries there until the heartbeat timeout.
     */
    private static void hold(long seconds, CountDownLatch engineClosed) {
        Thread holder = Thread.currentThread();
        Thread hook = new Thread(() -> {
            holder.interrupt();
            try {
                engineClosed.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "lmcache4j-demo-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            Thread.sleep(seconds * 1000);
        } catch (InterruptedException e) {
            return; // asked to stop: the engine closes on the way out, the hook waits for it
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is already shutting down: the hook runs and finds the engine closing
        }
    }

    /** Writes {@code {"tokens": [...]}}: a controller /lookup body for a prompt this engine stored. */
    private void writePrompt(int[] tokens) throws IOException {
        StringBuilder sb = new StringBuilder(tokens.length * 7 + 16).append("{\"tokens\": [");
        for (int i = 0; i < tokens.length; i++) {
            sb.append(i == 0 ? "" : ",").append(tokens[i]);
        }
        // Written beside, then renamed: whoever waits for the file never reads half of it.
        Path partial = promptOut.resolveSibling(promptOut.getFileName() + ".partial");
        Files.writeString(partial, sb.append("]}\n").toString());
        Files.move(partial, promptOut, StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
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

    /** Two lines of the machine report: the JDK and the CUDA runtime. */
    static String machine() {
        Runtime.Version v = Runtime.version();
        return String.format(Locale.ROOT, "machine    JDK %s (%s), %d CPUs%ncuda       %s",
                v, System.getProperty("java.vm.vendor"), Runtime.getRuntime().availableProcessors(),
                MachineReport.describe(CudaRuntime.load()));
    }

    /** The most GiB a size option takes: 1 PiB, far beyond any tier, well within a byte count. */
    static final double MAX_GB = 1 << 20;

    private static double decimal(String option, String value) {
        double d = OptionValues.decimal(option, value);
        if (Double.isFinite(d) && d > 0 && d <= MAX_GB) {
            return d;
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
