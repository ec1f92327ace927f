package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;

import lmcache4j.allocator.host.HostArenas;
import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.server.lm.LmServerLimits;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j server [--host H] [--port N] [--max-size GB] [--token T] [--max-frame-mb N] [limits]}:
 * runs an {@code lm://} cache server in the foreground until SIGINT/SIGTERM, then stops it
 * gracefully. Exit status 0, 1 when the server cannot start, 2 for bad arguments (a
 * {@code --max-size} below 1 MiB or beyond the machine's memory included).
 */
@Command(name = "server", description = {
        "Runs an lm:// cache server in the foreground until Ctrl-C / SIGTERM. It speaks LMCache's current lm:// frames "
                + "(lmcache/v1/protocol.py: 186-byte requests, 36-byte replies), so LMCache's own client can use it, and "
                + "lmcache4j's remote tier can use LMCache's server."},
        footer = {"Limits that are reached are counted and printed with the statistics when the server stops.",
                "Exit status: 0 after a graceful stop, 1 when the server cannot start, 2 for bad arguments."})
public final class ServerCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;
    private final CountDownLatch stop;

    @Option(names = "--host", paramLabel = "H", order = 0,
            description = "address to bind (default 127.0.0.1; use 0.0.0.0 to accept other machines)")
    private String host = "127.0.0.1";

    private int port = 65432;
    private double gb = 4;
    private String gbText = "4";
    private Optional<String> token = Optional.empty();
    private long frameMb = 1024;
    private LmServerLimits limits = LmServerLimits.defaults();

    private ServerCommand(PrintStream out, PrintStream err, CountDownLatch stop) {
        this.out = out;
        this.err = err;
        this.stop = stop;
    }

    @Option(names = "--port", paramLabel = "N", order = 1, description = "TCP port, 0 = any free port (default 65432)")
    private void port(String value) {
        port = (int) OptionValues.wholeNumber("--port", value, 0, 65535);
    }

    @Option(names = "--max-size", paramLabel = "GB", order = 2, description = "size of the off-heap payload pool, in 64 KiB "
            + "pages, from 0.001 (1 MiB) to the machine's memory; every entry is charged its pages plus 512 bytes, and least "
            + "recently used entries are evicted as the bytes of a new payload arrive, never for bytes not yet sent (default 4)")
    private void maxSize(String value) {
        gbText = CliText.echo(value);
        gb = OptionValues.decimal("--max-size", value);
    }

    @Option(names = "--token", paramLabel = "T", order = 3, description = "shared secret both sides prove by "
            + "challenge-response, never sent (lm://host:port?token=T); payloads are then tagged. Use a random one of 16 "
            + "bytes or more. Default none. A wrong proof is answered after 1 s, at most 10 a second in all.")
    private void token(String value) {
        token = Optional.of(value);
    }

    @Option(names = "--max-frame-mb", paramLabel = "N", order = 4,
            description = "largest payload one message may carry, in MiB (default 1024); larger closes the connection")
    private void maxFrameMb(String value) {
        frameMb = OptionValues.wholeNumber("--max-frame-mb", value, 1, 2047);
    }

    @Option(names = "--max-connections", paramLabel = "N", order = 5, description = "connections served at once (default: "
            + "half the open-file limit, at most 4096). At the limit the longest-idle connection (idle 2 s or more) is "
            + "closed to admit a new one; if none is idle the new one is closed at once")
    private void maxConnections(String value) {
        limits = limits.withMaxConnections(OptionValues.intAtLeast("--max-connections", value, 1));
    }

    @Option(names = "--max-entries", paramLabel = "N", order = 6, description = "entries stored at once (default: what a "
            + "quarter of the heap holds at 1 KiB an entry); the least recently used go first")
    private void maxEntries(String value) {
        limits = limits.withMaxEntries(OptionValues.intAtLeast("--max-entries", value, 1));
    }

    @Option(names = "--idle-timeout", paramLabel = "S", order = 7,
            description = "close a connection with no request for S seconds (default 3600)")
    private void idleTimeout(String value) {
        limits = limits.withIdleTimeout(OptionValues.seconds("--idle-timeout", value, MAX_TIMEOUT_SECONDS));
    }

    @Option(names = "--stall-timeout", paramLabel = "S", order = 8, description = "close a connection whose request, reply "
            + "or handshake stops moving for S seconds (default 30); a frame must also average at least 1 MiB/s")
    private void stallTimeout(String value) {
        limits = limits.withStallTimeout(OptionValues.seconds("--stall-timeout", value, MAX_TIMEOUT_SECONDS));
    }

    public static void main(String[] args) {
        CliMain.exit("server", () -> run(args, System.out, System.err));
    }

    /** Runs the server until the JVM is asked to stop; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, null);
    }

    /**
     * As {@link #run(String[], PrintStream, PrintStream)}; with {@code stop} non-null the server runs
     * until {@code stop} is counted down instead of installing a shutdown hook (for tests).
     */
    static int run(String[] args, PrintStream out, PrintStream err, CountDownLatch stop) {
        return CliMain.execute(new CommandLine(new ServerCommand(out, err, stop)), out, err, args);
    }

    @Override
    public Integer call() {
        InetAddress address;
        long maxBytes;
        try {
            maxBytes = validated();
            requireMemoryFor(maxBytes, MachineMemory.read());
            address = InetAddress.getByName(host);
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "server", e.getMessage());
        } catch (UnknownHostException e) {
            return CliMain.usageError(err, "server", "--host: unknown host: " + CliText.oneLine(e));
        }
        int maxFrameBytes = (int) (frameMb << 20);
        LmCacheServer server;
        try {
            server = LmCacheServer.start(address, port, maxBytes, token, maxFrameBytes, limits);
        } catch (IOException | RuntimeException e) {
            return CliMain.startFailure(err, "server", e, java.util.Map.of("lm", "--port"));
        }
        StopSignals.Armed stopping = StopSignals.arm(stop, "lmcache4j-lm-server-shutdown");
        out.println("lm:// server listening on " + server.address().getAddress().getHostAddress() + ":" + server.port()
                + " (max " + maxBytes + " bytes, max frame " + maxFrameBytes + " bytes"
                + (token.isPresent() ? ", token required" : "") + "; " + server.describeLimits() + ")");
        out.flush();
        stopping.awaitThen(() -> {
            server.close();
            out.println("lm:// server stopped: " + server.stats());
            out.flush();
        });
        return 0;
    }

    /** The smallest payload pool {@code --max-size} may ask for. */
    static final long MIN_BYTES = 1L << 20;

    /** The longest idle or stall timeout: a year. */
    private static final long MAX_TIMEOUT_SECONDS = 365L * 86_400;

    /**
     * Refuses a payload pool larger than the machine's memory: the server would be killed when it
     * filled, long after it started.
     */
    static void requireMemoryFor(long maxBytes, Optional<MachineMemory> machine) {
        requireMemoryFor("--max-size asks for a", "payload pool", maxBytes, machine);
    }

    /** Refuses {@code bytes} of off-heap memory the machine does not have: "{@code asks} N {@code what}, more than ...". */
    static void requireMemoryFor(String asks, String what, long bytes, Optional<MachineMemory> machine) {
        if (machine.isPresent() && bytes > machine.get().totalBytes()) {
            throw new IllegalArgumentException(asks + " " + HostArenas.formatBytes(bytes) + " " + what
                    + ", more than this machine's " + machine.get().describe());
        }
    }

    /** Checks the options against each other and returns the pool's size in bytes. */
    private long validated() {
        if (!(gb > 0) || Double.isInfinite(gb)) {
            throw new IllegalArgumentException("--max-size must be a positive number of GB, got " + gbText);
        }
        if (gb * (1L << 30) < MIN_BYTES) {
            throw new IllegalArgumentException("--max-size " + gbText + " GB is less than 1 MiB (0.001): the pool could hold almost nothing");
        }
        if (gb * (1L << 30) >= Long.MAX_VALUE) {
            throw new IllegalArgumentException("--max-size " + gbText + " GB is larger than any machine's memory");
        }
        if (token.isPresent() && token.get().isEmpty()) {
            throw new IllegalArgumentException("--token must not be empty");
        }
        return (long) (gb * (1L << 30));
    }



}
