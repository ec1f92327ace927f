package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import lmcache4j.s3.proxy.S3ProxyProcess;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j s3-server [--port N] [--dir D] [--bucket B]...}: runs a real S3 API server (s3proxy,
 * as a child process) over a local directory in the foreground until SIGINT/SIGTERM, and prints the
 * {@code remote_url} and credentials that reach it, so {@code demo --remote s3://...} and an engine can
 * be tried without an AWS account. Exit status 0 after a stop, 1 when it cannot start, 2 for bad arguments.
 */
@Command(name = "s3-server", description = {
        "Runs a local S3 API server (s3proxy, over a directory) in the foreground until Ctrl-C / SIGTERM, for the S3 tier: "
                + "it prints the remote_url to use (s3://127.0.0.1:PORT/BUCKET?disable_tls=true) and the credentials it "
                + "accepts (export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or extra_config aws_access_key_id / "
                + "aws_secret_access_key)."},
        footer = {"Exit status: 0 after a stop, 1 when the server cannot start, 2 for bad arguments."})
public final class S3ServerCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;
    private final CountDownLatch stop;

    private int port = 9000;
    private Path dir;
    private final List<String> buckets = new ArrayList<>();

    private S3ServerCommand(PrintStream out, PrintStream err, CountDownLatch stop) {
        this.out = out;
        this.err = err;
        this.stop = stop;
    }

    @Option(names = "--port", paramLabel = "N", order = 0, description = "TCP port on 127.0.0.1, 0 = any free port (default 9000)")
    private void port(String value) {
        port = (int) OptionValues.wholeNumber("--port", value, 0, 65535);
    }

    @Option(names = "--dir", paramLabel = "D", order = 1, description = "the directory the objects live in (default: a new "
            + "temporary directory, deleted at the stop); a bucket is a subdirectory of D/data")
    private void dir(String value) {
        dir = Path.of(value);
    }

    @Option(names = "--bucket", paramLabel = "B", order = 2, description = "a bucket to create (repeatable; default lmcache)")
    private void bucket(String value) {
        if (!value.matches("[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]")) {
            throw new IllegalArgumentException("--bucket '" + CliText.echo(value) + "' is not an S3 bucket name (3 to 63 "
                    + "lowercase letters, digits, dots and hyphens)");
        }
        buckets.add(value);
    }

    public static void main(String[] args) {
        CliMain.exit("s3-server", () -> run(args, System.out, System.err, null));
    }

    /** As {@link #main}, returning the exit status; with {@code stop} non-null it runs until that is counted down (tests). */
    static int run(String[] args, PrintStream out, PrintStream err, CountDownLatch stop) {
        return CliMain.execute(new CommandLine(new S3ServerCommand(out, err, stop)), out, err, args);
    }

    @Override
    public Integer call() {
        String[] names = (buckets.isEmpty() ? List.of("lmcache") : buckets).toArray(String[]::new);
        S3ProxyProcess server;
        try {
            server = dir == null ? S3ProxyProcess.startOnPort(port, names) : S3ProxyProcess.start(Files.createDirectories(dir), port, names);
        } catch (IOException | RuntimeException e) {
            return CliMain.failure(err, "s3-server", "cannot start s3proxy", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        }
        StopSignals.Armed stopping = StopSignals.arm(stop, "lmcache4j-s3-server-shutdown");
        out.println("S3 server (s3proxy) on 127.0.0.1:" + server.port() + " over " + server.dataDirectory());
        for (String b : names) {
            out.println("  remote_url: " + server.url(b));
        }
        out.println("  credentials: export AWS_ACCESS_KEY_ID=" + S3ProxyProcess.ACCESS_KEY_ID + " AWS_SECRET_ACCESS_KEY="
                + S3ProxyProcess.SECRET_ACCESS_KEY + "   (a local test identity; or extra_config aws_access_key_id / aws_secret_access_key)");
        out.flush();
        stopping.awaitThen(() -> {
            server.close();
            out.println("S3 server stopped");
            out.flush();
        });
        return 0;
    }
}
