package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerServer;
import lmcache4j.server.controller.Endpoint;

/**
 * {@code ./lmcache4j controller [--pull H:P] [--reply H:P] [--heartbeat H:P] [--http H:P] [--chunk-size N] ...}:
 * runs the cache controller in the foreground until SIGINT/SIGTERM, then stops it cleanly. Exit
 * status 0, 1 when it cannot start (an address in use), 2 for bad arguments.
 */
@Command(name = "controller", description = {
        "Runs the cache controller in the foreground until Ctrl-C / SIGTERM: the cluster-wide index of which instance "
                + "holds which chunks, KV-aware lookup for routers, and control of every engine. Wire-compatible with "
                + "LMCache's controller protocol (msgpack over ZeroMQ); an HTTP JSON API for routers and operators "
                + "(POST /lookup, GET /instances, POST /clear /pin /compress /decompress /move /health /check_finish /query_instance /query_worker_info, GET /metrics).",
        "Every address is loopback unless given; HOST:PORT, port 0 = any free port."},
        footer = {"Engines report with LMCache's settings: enable_controller, lmcache_instance_id, controller_pull_url = --pull, "
                + "controller_reply_url = --reply, lmcache_worker_ports. Lookups hash prompts with --chunk-size, "
                + "--save-unfull-chunk and --hash-seed, which must equal the engines' (LMCache's RegisterMsg does not carry them).",
                "Exit status: 0 after a graceful stop, 1 when the controller cannot start, 2 for bad arguments."})
public final class ControllerCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;
    private final CountDownLatch stop;

    private ControllerConfig config = ControllerConfig.defaults();
    private Optional<Path> secretFile = Optional.empty();
    private boolean insecure;
    private boolean printBearer;
    // The connection limits given; applied after every option, since --max-workers sets their defaults.
    private Optional<Integer> maxConnections = Optional.empty();
    private Optional<Integer> maxConnectionsPerHost = Optional.empty();
    private Optional<Integer> maxHandshaking = Optional.empty();
    private Optional<Duration> handshakeTimeout = Optional.empty();

    private ControllerCommand(PrintStream out, PrintStream err, CountDownLatch stop) {
        this.out = out;
        this.err = err;
        this.stop = stop;
    }

    @Option(names = "--pull", paramLabel = "HOST:PORT", order = 0,
            description = "PULL socket for workers' pushes (LMCache's controller_pull_url; default 127.0.0.1:8300)")
    private void pull(String value) {
        config = config.withEndpoints(endpoint("--pull", value), config.reply(), config.heartbeat(), config.http());
    }

    @Option(names = "--reply", paramLabel = "HOST:PORT", order = 1,
            description = "ROUTER socket for registrations and full-sync requests (controller_reply_url; default 127.0.0.1:8400)")
    private void reply(String value) {
        config = config.withEndpoints(config.pull(), endpoint("--reply", value), config.heartbeat(), config.http());
    }

    @Option(names = "--heartbeat", paramLabel = "HOST:PORT", order = 2,
            description = "ROUTER socket for heartbeats, told to workers when they register (default 127.0.0.1:8301)")
    private void heartbeat(String value) {
        config = config.withEndpoints(config.pull(), config.reply(), endpoint("--heartbeat", value), config.http());
    }

    @Option(names = "--http", paramLabel = "HOST:PORT", order = 3, description = "the HTTP JSON API (default 127.0.0.1:9000)")
    private void http(String value) {
        config = config.withEndpoints(config.pull(), config.reply(), config.heartbeat(), endpoint("--http", value));
    }

    @Option(names = "--chunk-size", paramLabel = "N", order = 4, description = "tokens per chunk, as the engines' chunk_size (default 256)")
    private void chunkSize(String value) {
        config = config.withHashing(OptionValues.intAtLeast("--chunk-size", value, 1), config.saveUnfullChunk(),
                config.hashAlgorithm(), config.hashSeed());
    }

    @Option(names = "--save-unfull-chunk", order = 5,
            description = "key a prompt's final shorter chunk too, as engines with save_unfull_chunk=true do")
    private void saveUnfullChunk(boolean value) {
        config = config.withHashing(config.chunkSize(), value, config.hashAlgorithm(), config.hashSeed());
    }

    @Option(names = "--hash-seed", paramLabel = "S", order = 6,
            description = "the engines' hash_seed / PYTHONHASHSEED (default: $PYTHONHASHSEED; without one, lookups match nothing)")
    private void hashSeed(String value) {
        config = config.withHashSeed(Optional.of(value));
    }

    @Option(names = "--hash-algorithm", paramLabel = "NAME", order = 7,
            description = "pre_caching_hash_algorithm of the engines (default sha256_cbor, the only portable one)")
    private void hashAlgorithm(String value) {
        config = config.withHashing(config.chunkSize(), config.saveUnfullChunk(), HashAlgorithm.fromName(value), config.hashSeed());
    }

    @Option(names = "--chunk-keys", paramLabel = "SCHEME", order = 8, description = "how a chunk becomes a key, as the "
            + "engines' controller_chunk_keys: lmcache (LMCache's token database's integer chain, the default: LMCache "
            + "workers' admits are found) or vllm (vLLM's block hash folded to its low 64 bits)")
    private void chunkKeys(String value) {
        try {
            config = config.withChunkKeys(ControllerKeys.Scheme.fromName(value));
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--chunk-keys: " + e.getMessage());
        }
    }

    @Option(names = "--model", paramLabel = "NAME", order = 8, description = "the served model's name (reported in /instances)")
    private void model(String value) {
        config = config.withModel(value);
    }

    @Option(names = "--worker-timeout", paramLabel = "S", order = 9, description = "drop a worker (and its entries) after S "
            + "seconds without a heartbeat (default 30)")
    private void workerTimeout(String value) {
        config = config.withTimeouts(OptionValues.seconds("--worker-timeout", value, 86_400), config.requestTimeout());
    }

    @Option(names = "--request-timeout", paramLabel = "S", order = 10,
            description = "how long a control message to a worker may take (default 5; a request without a reply is tried once more on a fresh socket)")
    private void requestTimeout(String value) {
        config = config.withTimeouts(config.workerTimeout(), OptionValues.seconds("--request-timeout", value, 86_400));
    }

    @Option(names = "--max-body-mb", paramLabel = "N", order = 11, description = "largest HTTP request body in MiB (default 8)")
    private void maxBodyMb(String value) {
        config = config.withLimits((int) OptionValues.wholeNumber("--max-body-mb", value, 1, 1024) << 20, config.httpThreads(),
                config.maxFrameBytes(), config.expectedEntries());
    }

    @Option(names = "--max-frame-mb", paramLabel = "N", order = 12,
            description = "largest ZeroMQ message accepted, in MiB; larger disconnects the sender (default 64)")
    private void maxFrameMb(String value) {
        config = config.withLimits(config.maxBodyBytes(), config.httpThreads(),
                OptionValues.wholeNumber("--max-frame-mb", value, 1, 2047) << 20, config.expectedEntries());
    }

    @Option(names = "--http-threads", paramLabel = "N", order = 13, description = "HTTP requests handled at once; requests still arriving do not count (default 4)")
    private void httpThreads(String value) {
        config = config.withLimits(config.maxBodyBytes(), OptionValues.intAtLeast("--http-threads", value, 1),
                config.maxFrameBytes(), config.expectedEntries());
    }

    @Option(names = "--expected-entries", paramLabel = "N", order = 14,
            description = "size the index for N (chunk, holder) entries at start (default 1048576; it grows beyond)")
    private void expectedEntries(String value) {
        config = config.withLimits(config.maxBodyBytes(), config.httpThreads(), config.maxFrameBytes(),
                (int) OptionValues.wholeNumber("--expected-entries", value, 0, 1 << 29));
    }

    @Option(names = "--max-entries", paramLabel = "N", order = 15, description = "(chunk, holder) entries the index holds at "
            + "most, about 40 bytes of heap each; admits beyond it are dropped and counted (default 16777216)")
    private void maxEntries(String value) {
        ControllerConfig.Caps c = config.caps();
        config = config.withCaps(new ControllerConfig.Caps(OptionValues.wholeNumber("--max-entries", value, 1, 1L << 40),
                c.maxWorkers(), c.maxQueuedOrchestrations()));
    }

    @Option(names = "--max-workers", paramLabel = "N", order = 16,
            description = "registered workers at most; new ones beyond it are refused until one leaves (default 4096)")
    private void maxWorkers(String value) {
        ControllerConfig.Caps c = config.caps();
        config = config.withCaps(new ControllerConfig.Caps(c.maxEntries(),
                (int) OptionValues.wholeNumber("--max-workers", value, 1, 1 << 20), c.maxQueuedOrchestrations()));
    }

    @Option(names = "--max-queued-orchestrations", paramLabel = "N", order = 17, description = "fire-and-forget "
            + "orchestration messages waiting or being carried out at most, each up to --max-frame-mb; more are dropped and "
            + "counted (default 4)")
    private void maxQueuedOrchestrations(String value) {
        ControllerConfig.Caps c = config.caps();
        config = config.withCaps(new ControllerConfig.Caps(c.maxEntries(), c.maxWorkers(),
                (int) OptionValues.wholeNumber("--max-queued-orchestrations", value, 1, 1 << 16)));
    }

    @Option(names = "--max-connections", paramLabel = "N", order = 21, description = "connections the three ZeroMQ sockets"
            + " keep open together; more are closed as they arrive and counted (default 3 x --max-workers + 256)")
    private void maxConnections(String value) {
        maxConnections = Optional.of(OptionValues.intInRange("--max-connections", value, 1, 1 << 24));
    }

    @Option(names = "--max-connections-per-host", paramLabel = "N", order = 22, description = "of those, from one address"
            + " (default 1024, at most --max-connections)")
    private void maxConnectionsPerHost(String value) {
        maxConnectionsPerHost = Optional.of(OptionValues.intInRange("--max-connections-per-host", value, 1, 1 << 24));
    }

    @Option(names = "--max-handshaking", paramLabel = "N", order = 23, description = "of those, not yet proven: in their "
            + "CURVE handshake, which a stranger never completes (without a secret: before their first message); each "
            + "holds about 12 KiB of heap and 16 KiB off it (default 256)")
    private void maxHandshaking(String value) {
        maxHandshaking = Optional.of(OptionValues.intInRange("--max-handshaking", value, 1, 1 << 24));
    }

    @Option(names = "--handshake-timeout", paramLabel = "S", order = 24, description = "seconds a connection has to prove"
            + " itself, greeted or not, before it is closed (default 30)")
    private void handshakeTimeout(String value) {
        handshakeTimeout = Optional.of(OptionValues.seconds("--handshake-timeout", value, 3600));
    }

    @Option(names = "--secret-file", paramLabel = "FILE", order = 18, description = "the deployment secret (a file of mode "
            + "600, 16 bytes or more; default: $" + DeploymentSecret.FILE_ENV + "): CURVE on every ZeroMQ socket and a "
            + "bearer token on the HTTP API; engines set deployment_secret_file to the same file")
    private void secretFile(String value) {
        secretFile = Optional.of(Path.of(value));
    }

    @Option(names = "--insecure", order = 19, description = "run without a secret: anyone who reaches a port can register, "
            + "report and command engines. For loopback development, and for LMCache's Python workers, which cannot "
            + "authenticate")
    private void insecure(boolean value) {
        insecure = value;
    }

    @Option(names = "--print-bearer", order = 20,
            description = "print the HTTP bearer token the secret gives (Authorization: Bearer TOKEN) and exit")
    private void printBearer(boolean value) {
        printBearer = value;
    }

    public static void main(String[] args) {
        CliMain.exit("controller", () -> run(args, System.out, System.err));
    }

    /** Runs the controller until the JVM is asked to stop; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, null);
    }

    /** As {@link #run(String[], PrintStream, PrintStream)}; with {@code stop} non-null, runs until it is counted down. */
    static int run(String[] args, PrintStream out, PrintStream err, CountDownLatch stop) {
        return CliMain.execute(new CommandLine(new ControllerCommand(out, err, stop)), out, err, args);
    }

    @Override
    public Integer call() {
        Optional<DeploymentSecret> secret;
        try {
            secret = secret(); // read here too, so a bad file is a usage error before anything starts
            config = config.withSecretFile(secretPath());
            ControllerConfig.Caps c = config.caps();
            int total = maxConnections.orElse(c.maxConnections());
            config = config.withCaps(c.withConnections(total,
                    maxConnectionsPerHost.orElse(Math.min(total, c.maxConnectionsPerHost())),
                    maxHandshaking.orElse(Math.min(total, c.maxHandshaking())), handshakeTimeout.orElse(c.handshakeTimeout())));
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(new CommandLine(this), e.getMessage(), e);
        }
        if (printBearer) {
            out.println(secret.orElseThrow().bearerToken()); // secret() refused --print-bearer without one
            return 0;
        }
        if (insecure && !List.of(config.pull(), config.reply(), config.heartbeat(), config.http()).stream()
                .allMatch(ControllerCommand::loopback)) {
            err.println("lmcache4j controller: warning: --insecure on a non-loopback address: anyone who reaches it can "
                    + "register workers, report chunks and command engines");
        }
        ControllerServer controller;
        try {
            controller = ControllerServer.start(config);
        } catch (RuntimeException e) {
            return CliMain.startFailure(err, "controller", e,
                    Map.of("pull", "--pull", "reply", "--reply", "heartbeat", "--heartbeat", "http", "--http"));
        }
        StopSignals.Armed stopping = StopSignals.arm(stop, "lmcache4j-controller-shutdown");
        out.println("lmcache4j controller: pull " + controller.pullEndpoint() + ", reply " + controller.replyEndpoint()
                + ", heartbeat " + controller.heartbeatEndpoint() + " (advertised " + controller.advertisedHeartbeat()
                + "), http http://" + controller.httpEndpoint());
        out.println("lmcache4j controller: " + (config.secretFile().isPresent()
                ? "secured by the deployment secret " + secretSource() + ": CURVE on every ZeroMQ socket, a bearer token on HTTP"
                : "--insecure: no authentication; anyone who reaches these ports can register workers and command engines"));
        out.println("lmcache4j controller: chunk size " + config.chunkSize() + (config.saveUnfullChunk() ? " (partial last chunk keyed)" : "")
                + ", " + config.hashAlgorithm().lmcacheName() + ", hash seed " + (config.hashSeed().isPresent() ? "set" : "NOT set")
                + ", chunk keys " + config.chunkKeys().configName()
                + ", worker timeout " + config.workerTimeout().toMillis() / 1000.0 + " s");
        out.flush();
        stopping.awaitThen(() -> {
            controller.close();
            out.println("lmcache4j controller: stopped; " + controller.describeCounts());
            out.flush();
        });
        return 0;
    }

    /** The secret's file, from --secret-file or the environment. */
    private Optional<Path> secretPath() {
        return secretFile.or(() -> Optional.ofNullable(System.getenv(DeploymentSecret.FILE_ENV)).filter(f -> !f.isBlank())
                .map(Path::of));
    }

    /** Where the secret came from, for the start line. */
    private String secretSource() {
        return secretFile.map(f -> "in " + f).orElseGet(() -> "in $" + DeploymentSecret.FILE_ENV + " (" + secretPath().orElseThrow() + ")");
    }

    /** The deployment secret from --secret-file or the environment; none only with --insecure. */
    private Optional<DeploymentSecret> secret() {
        Optional<Path> file = secretPath();
        if (printBearer && file.isEmpty()) {
            throw new IllegalArgumentException("--print-bearer needs the controller's secret file: ./lmcache4j controller "
                    + "--secret-file FILE --print-bearer");
        }
        if (file.isPresent() && insecure) {
            throw new IllegalArgumentException("--insecure and a deployment secret exclude each other");
        }
        if (file.isEmpty() && !insecure) {
            throw new IllegalArgumentException("the controller needs a deployment secret: --secret-file FILE (or $"
                    + DeploymentSecret.FILE_ENV + "; make one with: (umask 077; head -c 32 /dev/urandom | base64 > FILE)). "
                    + "For loopback development, or LMCache's Python workers, which cannot authenticate, pass --insecure");
        }
        return file.map(DeploymentSecret::fromFile);
    }

    private static boolean loopback(Endpoint e) {
        return e.host().startsWith("127.") || e.host().equals("localhost") || e.host().equals("::1");
    }

    private static Endpoint endpoint(String option, String value) {
        try {
            return Endpoint.parse(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": " + e.getMessage());
        }
    }

}
