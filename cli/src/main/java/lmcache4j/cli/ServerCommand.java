package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import lmcache4j.allocator.host.HostArenas;
import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.server.lm.LmServerLimits;

/**
 * {@code ./lmcache4j server [--host H] [--port N] [--max-size GB] [--token T] [--max-frame-mb N] [limits]}:
 * runs an {@code lm://} cache server in the foreground until SIGINT/SIGTERM, then stops it
 * gracefully. Exit status 0, 1 when the server cannot start, 2 for bad arguments (a
 * {@code --max-size} below 1 MiB or beyond the machine's memory included).
 */
public final class ServerCommand {
    static final String USAGE = """
            usage: ./lmcache4j server [--host H] [--port N] [--max-size GB] [--token T] [--max-frame-mb N]
                                      [--max-connections N] [--max-entries N] [--idle-timeout S] [--stall-timeout S]
            Runs an lm:// cache server in the foreground until Ctrl-C / SIGTERM. It speaks LMCache's current
            lm:// frames (lmcache/v1/protocol.py: 186-byte requests, 36-byte replies), so LMCache's own
            client can use it, and lmcache4j's remote tier can use LMCache's server.
              --host H             address to bind (default 127.0.0.1; use 0.0.0.0 to accept other machines)
              --port N             TCP port, 0 = any free port (default 65432)
              --max-size GB        size of the off-heap payload pool, in 64 KiB pages, from 0.001 (1 MiB) to
                                   the machine's memory; every entry is charged its pages plus 512 bytes, and
                                   least recently used entries are evicted as the bytes of a new payload
                                   arrive, never for bytes not yet sent (default 4)
              --token T            shared secret clients must send first (lm://host:port?token=T); default
                                   none. A wrong token is answered after 1 s, at most 10 a second in all.
              --max-frame-mb N     largest payload one message may carry, in MiB (default 1024); larger
                                   closes the connection
              --max-connections N  connections served at once (default: half the open-file limit, at most
                                   4096). At the limit the longest-idle connection (idle 2 s or more) is
                                   closed to admit a new one; if none is idle the new one is closed at once
              --max-entries N      entries stored at once (default: what a quarter of the heap holds at
                                   1 KiB an entry); the least recently used go first
              --idle-timeout S     close a connection with no request for S seconds (default 3600)
              --stall-timeout S    close a connection whose request, reply or AUTH stops moving for S
                                   seconds (default 30); a frame must also average at least 1 MiB/s
            Limits that are reached are counted and printed with the statistics when the server stops.
            Exit status: 0 after a graceful stop, 1 when the server cannot start, 2 for bad arguments.
            """;

    private ServerCommand() {
    }

    record Options(String host, int port, long maxBytes, Optional<String> token, int maxFrameBytes,
                   LmServerLimits limits) {
    }

    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
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
        for (String a : args) {
            if (a.equals("-h") || a.equals("--help")) {
                out.print(USAGE);
                return 0;
            }
        }
        Options o;
        InetAddress host;
        try {
            o = parse(args);
            requireMemoryFor(o.maxBytes(), MachineMemory.read());
            host = InetAddress.getByName(o.host());
        } catch (UsageException e) {
            return CliMain.usageError(err, "server", e.getMessage());
        } catch (UnknownHostException e) {
            return CliMain.usageError(err, "server", "--host: unknown host: " + CliText.oneLine(e));
        }
        LmCacheServer server;
        try {
            server = LmCacheServer.start(host, o.port(), o.maxBytes(), o.token(), o.maxFrameBytes(), o.limits());
        } catch (IOException | RuntimeException e) {
            return CliMain.failure(err, "server", "cannot start", e);
        }
        CountDownLatch done = new CountDownLatch(1);
        CountDownLatch stopSignal = stop != null ? stop : new CountDownLatch(1);
        Thread hook = null;
        if (stop == null) {
            hook = new Thread(() -> {
                stopSignal.countDown();
                try {
                    done.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "lm-server-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
        }
        out.println("lm:// server listening on " + server.address().getAddress().getHostAddress() + ":" + server.port()
                + " (max " + o.maxBytes() + " bytes, max frame " + o.maxFrameBytes() + " bytes"
                + (o.token().isPresent() ? ", token required" : "") + "; " + server.describeLimits() + ")");
        out.flush();
        try {
            stopSignal.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            server.close();
            out.println("lm:// server stopped: " + server.stats());
            out.flush();
            done.countDown();
        }
        return 0;
    }

    /** The smallest payload pool {@code --max-size} may ask for. */
    static final long MIN_BYTES = 1L << 20;

    /**
     * Refuses a payload pool larger than the machine's memory: the server would be killed when it
     * filled, long after it started.
     */
    static void requireMemoryFor(long maxBytes, Optional<MachineMemory> machine) throws UsageException {
        if (machine.isPresent() && maxBytes > machine.get().totalBytes()) {
            throw new UsageException("--max-size asks for a " + HostArenas.formatBytes(maxBytes)
                    + " payload pool, more than this machine's " + machine.get().describe());
        }
    }

    static Options parse(String[] args) throws UsageException {
        String host = "127.0.0.1";
        int port = 65432;
        double gb = 4;
        String gbText = "4";
        Optional<String> token = Optional.empty();
        long frameMb = 1024;
        LmServerLimits limits = LmServerLimits.defaults();
        Set<String> known = Set.of("--host", "--port", "--max-size", "--token", "--max-frame-mb",
                "--max-connections", "--max-entries", "--idle-timeout", "--stall-timeout");
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            CliFlag flag = CliFlag.of(arg);
            String name = flag.name();
            String value = flag.value();
            if (!known.contains(name)) {
                throw new UsageException("unknown argument '" + CliText.echo(arg) + "'");
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new UsageException(name + " needs a value");
                }
                value = args[++i];
            }
            try {
                switch (name) {
                    case "--host" -> host = value;
                    case "--port" -> port = Integer.parseInt(value);
                    case "--max-size" -> {
                        gbText = CliText.echo(value);
                        gb = Double.parseDouble(value);
                    }
                    case "--token" -> token = Optional.of(value);
                    case "--max-connections" -> limits = limits.withMaxConnections(positiveInt(name, value));
                    case "--max-entries" -> limits = limits.withMaxEntries(positiveInt(name, value));
                    case "--idle-timeout" -> limits = limits.withIdleTimeout(seconds(name, value));
                    case "--stall-timeout" -> limits = limits.withStallTimeout(seconds(name, value));
                    default -> frameMb = Long.parseLong(value);
                }
            } catch (NumberFormatException e) {
                throw new UsageException(name + " needs a number, got '" + CliText.echo(value) + "'");
            }
        }
        if (port < 0 || port > 65535) {
            throw new UsageException("--port must be 0..65535, got " + port);
        }
        if (!(gb > 0) || Double.isInfinite(gb)) {
            throw new UsageException("--max-size must be a positive number of GB, got " + gbText);
        }
        if (gb * (1L << 30) < MIN_BYTES) {
            throw new UsageException("--max-size " + gbText + " GB is less than 1 MiB (0.001): the pool could hold almost nothing");
        }
        if (gb * (1L << 30) >= Long.MAX_VALUE) {
            throw new UsageException("--max-size " + gbText + " GB is larger than any machine's memory");
        }
        if (frameMb < 1 || frameMb > 2047) {
            throw new UsageException("--max-frame-mb must be 1..2047, got " + frameMb);
        }
        if (token.isPresent() && token.get().isEmpty()) {
            throw new UsageException("--token must not be empty");
        }
        return new Options(host, port, (long) (gb * (1L << 30)), token, (int) (frameMb << 20), limits);
    }

    private static int positiveInt(String name, String value) throws UsageException {
        int n = Integer.parseInt(value);
        if (n < 1) {
            throw new UsageException(name + " must be at least 1, got " + n);
        }
        return n;
    }

    private static Duration seconds(String name, String value) throws UsageException {
        double s = Double.parseDouble(value);
        if (!(s >= 0.001) || s > 365 * 86_400) {
            throw new UsageException(name + " must be 0.001 to 31536000 seconds, got " + CliText.echo(value));
        }
        return Duration.ofNanos((long) (s * 1e9));
    }
}
