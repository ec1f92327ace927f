package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;

import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.MpServer;
import lmcache4j.server.mp.MpServerSettings;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j mp-server [--host H] [--port N] [--http-port N] [--l1-size GB] [--chunk-size N] ...}:
 * runs lmcache4j as LMCache's multiprocess server in the foreground until SIGINT/SIGTERM. Exit
 * status 0 after a graceful stop, 1 when it cannot start, 2 for bad arguments.
 */
@Command(name = "mp-server", description = {
        "Runs lmcache4j as LMCache's multiprocess (MP) server until Ctrl-C / SIGTERM: the process vLLM's LMCache MP "
                + "connector sends lookups, stores and retrieves to (LMCache dev after PR #5161; ZeroMQ ROUTER, msgpack frames).",
        "Chunks live in one POSIX shared-memory pool the workers map (/dev/shm); workers copy KV into and out of it "
                + "(LMCache's engine-driven transfer: start vLLM with LMCACHE_MP_TRANSFER_MODE=engine_driven)."},
        footer = {"Exit status: 0 after a graceful stop, 1 when the server cannot start, 2 for bad arguments."})
public final class MpServerCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;
    private final CountDownLatch stop;

    @Option(names = "--host", paramLabel = "H", order = 0, description = "address of the ZeroMQ socket (default 127.0.0.1)")
    private String host = "127.0.0.1";

    @Option(names = "--http-host", paramLabel = "H", order = 2, description = "address of the HTTP port (default 127.0.0.1)")
    private String httpHost = "127.0.0.1";

    private int port = MpServerSettings.DEFAULT_PORT;
    private int httpPort = MpServerSettings.DEFAULT_HTTP_PORT;
    private double gb = 1;
    private int chunkSize = MpServerSettings.DEFAULT_CHUNK_SIZE;
    private String shmName;
    private Duration lockTtl = Duration.ofSeconds(300);
    private Duration reapTimeout = Duration.ZERO;
    private Path l2Disk;
    private double l2DiskGb = 10;
    private String l2Remote;
    private double l2StagingGb = 0.25;
    private int l2Queue = MpL2Settings.NONE.writeQueue();
    private Duration l2Timeout = MpL2Settings.NONE.prefetchTimeout();
    private Optional<Integer> maxConnections = Optional.empty();
    private Optional<Integer> maxConnectionsPerHost = Optional.empty();
    private Optional<Integer> maxHandshaking = Optional.empty();
    private Optional<Duration> handshakeTimeout = Optional.empty();
    /** The --l2-* options given that only shape a lower tier: an error without --l2-disk or --l2-remote. */
    private final java.util.Set<String> l2Shaping = new java.util.LinkedHashSet<>();

    private MpServerCommand(PrintStream out, PrintStream err, CountDownLatch stop) {
        this.out = out;
        this.err = err;
        this.stop = stop;
    }

    @Option(names = "--port", paramLabel = "N", order = 1, description = "ZeroMQ port, 0 = any free one (default "
            + MpServerSettings.DEFAULT_PORT + "; vLLM's kv_transfer_config extra lmcache.mp.port must name it)")
    private void port(String value) {
        port = (int) OptionValues.wholeNumber("--port", value, 0, 65535);
    }

    @Option(names = "--http-port", paramLabel = "N", order = 3, description = "HTTP port (/api/healthcheck, /api/status, "
            + "/metrics, /api/clear-cache, /api/quota/SALT), 0 = any free one, -1 = none (default "
            + MpServerSettings.DEFAULT_HTTP_PORT + ")")
    private void httpPort(String value) {
        httpPort = (int) OptionValues.wholeNumber("--http-port", value, -1, 65535);
    }

    @Option(names = "--l1-size", paramLabel = "GB", order = 4, description = "size of the shared-memory pool that holds "
            + "every chunk, in GB (default 1); /dev/shm must have room for it")
    private void l1Size(String value) {
        gb = OptionValues.decimal("--l1-size", value);
        if (!(gb > 0) || gb * (1L << 30) < (1 << 20) || Double.isInfinite(gb)) {
            throw new IllegalArgumentException("--l1-size must be at least 0.001 GB (1 MiB), got " + CliText.echo(value));
        }
    }

    @Option(names = "--chunk-size", paramLabel = "N", order = 5, description = "tokens per chunk (default 256, LMCache's)")
    private void chunkSize(String value) {
        chunkSize = (int) OptionValues.wholeNumber("--chunk-size", value, 1, 1 << 16);
    }

    @Option(names = "--shm-name", paramLabel = "NAME", order = 6, description = "the pool's name under /dev/shm (default "
            + "lmcache4j-mp-PID-...); it must not exist yet, and is removed when the server stops")
    private void shmName(String value) {
        shmName = value;
    }

    @Option(names = "--lock-ttl", paramLabel = "S", order = 7, description = "seconds a lookup's read locks and a prepared "
            + "store's slots live without their commit (default 300)")
    private void lockTtl(String value) {
        lockTtl = OptionValues.seconds("--lock-ttl", value, 86_400);
    }

    @Option(names = "--reap-timeout", paramLabel = "S", order = 8, description = "unregister an instance silent for S "
            + "seconds; 0 = never (default 0)")
    private void reapTimeout(String value) {
        reapTimeout = value.strip().equals("0") ? Duration.ZERO : OptionValues.seconds("--reap-timeout", value, 86_400);
    }

    @Option(names = "--l2-disk", paramLabel = "DIR", order = 9, description = "a lower tier on local disk: every stored "
            + "chunk is written through to DIR and loaded back on a lookup the pool misses; kept across restarts (default: none)")
    private void l2Disk(String value) {
        if (value.isBlank()) {
            throw new IllegalArgumentException("--l2-disk needs a directory");
        }
        if (java.nio.file.Files.exists(Path.of(value)) && !java.nio.file.Files.isDirectory(Path.of(value))) {
            throw new IllegalArgumentException("--l2-disk " + CliText.echo(value) + " is a file; name a directory (it is "
                    + "created when missing)");
        }
        l2Disk = Path.of(value);
    }

    @Option(names = "--l2-disk-size", paramLabel = "GB", order = 10, description = "capacity of --l2-disk in GB; the "
            + "least recently used files go first (default 10)")
    private void l2DiskSize(String value) {
        l2DiskGb = gigabytes("--l2-disk-size", value);
        l2Shaping.add("--l2-disk-size");
    }

    @Option(names = "--l2-remote", paramLabel = "URL", order = 11, description = "a remote lower tier, written through "
            + "and loaded from as the disk is: lm://host:port, redis://host:port, fs:///dir ... (default: none)")
    private void l2Remote(String value) {
        if (!value.contains("://")) {
            throw new IllegalArgumentException("--l2-remote needs a URL with a scheme (lm://, redis://, fs://...), got '"
                    + CliText.echo(value) + "'");
        }
        l2Remote = value;
    }

    @Option(names = "--l2-staging-size", paramLabel = "GB", order = 12, description = "host memory the lower tiers copy "
            + "through (never the pool), half for writes and half for loads (default 0.25)")
    private void l2StagingSize(String value) {
        l2StagingGb = gigabytes("--l2-staging-size", value);
        l2Shaping.add("--l2-staging-size");
        if (l2StagingGb * (1L << 30) < MpL2Settings.MIN_STAGING_BYTES) {
            throw new IllegalArgumentException("--l2-staging-size must be at least 0.002 GB (2 MiB: half for writes, half"
                    + " for loads), got " + CliText.echo(value));
        }
    }

    @Option(names = "--l2-write-queue", paramLabel = "N", order = 13, description = "stored chunks that may wait for the "
            + "lower tiers' writer; beyond that writes are dropped and counted (default 1024)")
    private void l2WriteQueue(String value) {
        l2Queue = OptionValues.intInRange("--l2-write-queue", value, 1, 1 << 20);
        l2Shaping.add("--l2-write-queue");
    }

    @Option(names = "--l2-timeout", paramLabel = "S", order = 14, description = "the longest a lookup's load from the "
            + "lower tiers runs; what is not loaded by then is a miss; at most half --lock-ttl (default 30)")
    private void l2Timeout(String value) {
        l2Timeout = OptionValues.seconds("--l2-timeout", value, 3_600);
        l2Shaping.add("--l2-timeout");
    }

    @Option(names = "--max-connections", paramLabel = "N", order = 15, description = "connections the ZeroMQ socket keeps"
            + " open at once; more are closed as they arrive and counted (default 1024)")
    private void maxConnections(String value) {
        maxConnections = Optional.of(OptionValues.intInRange("--max-connections", value, 1, 1 << 24));
    }

    @Option(names = "--max-connections-per-host", paramLabel = "N", order = 16, description = "of those, from one address"
            + " (default: all of them; vLLM runs beside the server)")
    private void maxConnectionsPerHost(String value) {
        maxConnectionsPerHost = Optional.of(OptionValues.intInRange("--max-connections-per-host", value, 1, 1 << 24));
    }

    @Option(names = "--max-handshaking", paramLabel = "N", order = 17, description = "of those, before their first "
            + "message (the server has no authentication: a connection proves itself by sending one); default 256")
    private void maxHandshaking(String value) {
        maxHandshaking = Optional.of(OptionValues.intInRange("--max-handshaking", value, 1, 1 << 24));
    }

    @Option(names = "--handshake-timeout", paramLabel = "S", order = 18, description = "seconds a connection has to send"
            + " its first message, greeted or not, before it is closed (default 30)")
    private void handshakeTimeout(String value) {
        handshakeTimeout = Optional.of(OptionValues.seconds("--handshake-timeout", value, 3_600));
    }

    private static double gigabytes(String option, String value) {
        double gb = OptionValues.decimal(option, value);
        if (!(gb > 0) || gb * (1L << 30) < (1 << 20) || Double.isInfinite(gb)) {
            throw new IllegalArgumentException(option + " must be at least 0.001 GB (1 MiB), got " + CliText.echo(value));
        }
        return gb;
    }

    public static void main(String[] args) {
        CliMain.exit("mp-server", () -> run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, null);
    }

    /** With {@code stop} non-null the server runs until it is counted down instead of a shutdown hook (tests). */
    static int run(String[] args, PrintStream out, PrintStream err, CountDownLatch stop) {
        return CliMain.execute(new CommandLine(new MpServerCommand(out, err, stop)), out, err, args);
    }

    @Override
    public Integer call() {
        if (l2Disk == null && l2Remote == null && !l2Shaping.isEmpty()) {
            return CliMain.usageError(err, "mp-server", String.join(", ", l2Shaping) + " shape" + (l2Shaping.size() == 1 ? "s" : "")
                    + " a lower tier, but there is none: add --l2-disk DIR and/or --l2-remote URL, or leave "
                    + (l2Shaping.size() == 1 ? "it" : "them") + " out");
        }
        MpServerSettings settings;
        try {
            long poolBytes = (long) (gb * (1L << 30));
            long stagingBytes = l2Disk != null || l2Remote != null ? (long) (l2StagingGb * (1L << 30)) : 0;
            ServerCommand.requireMemoryFor(stagingBytes > 0 ? "--l1-size and --l2-staging-size ask for" : "--l1-size asks for a",
                    stagingBytes > 0 ? "of pool and staging memory" : "shared-memory pool", poolBytes + stagingBytes,
                    MachineMemory.read());
            settings = MpServerSettings.defaults(poolBytes).withHosts(host, httpHost).withPorts(port, httpPort)
                    .withChunkSize(chunkSize).withLifetimes(Duration.ofSeconds(600), lockTtl, reapTimeout);
            if (shmName != null) {
                settings = settings.withShmName(shmName);
            }
            MpL2Settings l2 = MpL2Settings.NONE.withStaging((long) (l2StagingGb * (1L << 30)), l2Queue)
                    .withPrefetchTimeout(l2Timeout);
            if (l2Disk != null) {
                l2 = l2.withDisk(l2Disk, (long) (l2DiskGb * (1L << 30)));
            }
            if (l2Remote != null) {
                l2 = l2.withRemote(l2Remote);
            }
            settings = settings.withL2(l2);
            int total = maxConnections.orElse(MpServerSettings.DEFAULT_MAX_CONNECTIONS);
            settings = settings.withConnections(total, maxConnectionsPerHost.orElse(total),
                    maxHandshaking.orElse(Math.min(total, MpServerSettings.DEFAULT_MAX_HANDSHAKING)),
                    handshakeTimeout.orElse(MpServerSettings.DEFAULT_HANDSHAKE_TIMEOUT));
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "mp-server", e.getMessage());
        }
        MpServer server;
        try {
            server = MpServer.start(settings);
        } catch (IOException | RuntimeException e) {
            return CliMain.startFailure(err, "mp-server", e, Map.of("zmq", "--port", "http", "--http-port; -1: no HTTP"));
        }
        StopSignals.Armed stopping = StopSignals.arm(stop, "lmcache4j-mp-server-shutdown");
        out.println("mp-server listening on tcp://" + settings.host() + ":" + server.port() + " (chunk " + settings.chunkSize()
                + " tokens, pool /dev/shm/" + server.shmName() + " of " + settings.poolBytes() + " bytes"
                + (server.httpPort() >= 0 ? ", HTTP on " + settings.httpHost() + ":" + server.httpPort() : "")
                + (l2Disk != null ? ", L2 disk " + l2Disk : "") + (l2Remote != null ? ", L2 remote" : "") + ")");
        out.flush();
        stopping.awaitThen(() -> {
            server.close();
            out.println("mp-server stopped");
            out.flush();
        });
        return 0;
    }
}
