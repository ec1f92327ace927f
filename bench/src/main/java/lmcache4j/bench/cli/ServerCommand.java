package lmcache4j.bench.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;

import lmcache4j.engine.remote.lm.LmCacheServer;

/**
 * {@code ./lmcache4j server [--host H] [--port N] [--max-size GB] [--token T] [--max-frame-mb N]}:
 * runs an {@code lm://} cache server in the foreground until SIGINT/SIGTERM, then stops it
 * gracefully. Exit status 0, 1 when the server cannot start, 2 for bad arguments.
 */
public final class ServerCommand {
    static final String USAGE = """
            usage: ./lmcache4j server [--host H] [--port N] [--max-size GB] [--token T] [--max-frame-mb N]
            Runs an lm:// cache server (LMCache's protocol, spec 4.9) in the foreground until Ctrl-C / SIGTERM.
              --host H          address to bind (default 127.0.0.1; use 0.0.0.0 to accept other machines)
              --port N          TCP port, 0 = any free port (default 65432)
              --max-size GB     size of the off-heap payload pool; least recently used entries are
                                evicted when a payload does not fit (default 4)
              --token T         shared secret clients must send first (lm://host:port?token=T); default none
              --max-frame-mb N  largest payload one message may carry, in MiB (default 1024)
            """;

    private ServerCommand() {
    }

    record Options(String host, int port, long maxBytes, Optional<String> token, int maxFrameBytes) {
    }

    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
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
            host = InetAddress.getByName(o.host());
        } catch (UsageException e) {
            err.println("lmcache4j server: " + e.getMessage());
            err.println("run ./lmcache4j server --help for the options");
            return 2;
        } catch (UnknownHostException e) {
            err.println("lmcache4j server: unknown host: " + e.getMessage());
            return 2;
        }
        LmCacheServer server;
        try {
            server = LmCacheServer.start(host, o.port(), o.maxBytes(), o.token(), o.maxFrameBytes());
        } catch (IOException | IllegalArgumentException e) {
            err.println("lmcache4j server: " + e.getMessage());
            return 1;
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
                + (o.token().isPresent() ? ", token required" : "") + ")");
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

    static Options parse(String[] args) throws UsageException {
        String host = "127.0.0.1";
        int port = 65432;
        double gb = 4;
        Optional<String> token = Optional.empty();
        long frameMb = 1024;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            CliFlag flag = CliFlag.of(arg);
            String name = flag.name();
            String value = flag.value();
            if (!name.equals("--host") && !name.equals("--port") && !name.equals("--max-size") && !name.equals("--token")
                    && !name.equals("--max-frame-mb")) {
                throw new UsageException("unknown argument '" + arg + "'");
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
                    case "--max-size" -> gb = Double.parseDouble(value);
                    case "--token" -> token = Optional.of(value);
                    default -> frameMb = Long.parseLong(value);
                }
            } catch (NumberFormatException e) {
                throw new UsageException(name + " needs a number, got '" + value + "'");
            }
        }
        if (port < 0 || port > 65535) {
            throw new UsageException("--port must be 0..65535, got " + port);
        }
        if (!(gb > 0) || Double.isInfinite(gb)) {
            throw new UsageException("--max-size must be a positive number of GB, got " + gb);
        }
        if (frameMb < 1 || frameMb > 2047) {
            throw new UsageException("--max-frame-mb must be 1..2047, got " + frameMb);
        }
        if (token.isPresent() && token.get().isEmpty()) {
            throw new UsageException("--token must not be empty");
        }
        return new Options(host, port, (long) (gb * (1L << 30)), token, (int) (frameMb << 20));
    }
}
