package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.server.pd.PdProxy;
import lmcache4j.server.pd.PdWorkerServer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j pd-proxy --prefiller H:P --decoder H:P (--secret-file F | --token-file F) [...]}:
 * the disaggregated-prefill proxy in the foreground until SIGINT/SIGTERM. Exit status 0 after a
 * graceful stop, 1 when it cannot start, 2 for bad arguments.
 */
@Command(name = "pd-proxy", description = {
        "Runs the disaggregated-prefill proxy in the foreground until Ctrl-C / SIGTERM (LMCache's disagg_proxy_server.py). "
                + "POST /generate {\"prompt_token_ids\": [...], \"max_tokens\": N} sends the prompt to a prefiller with a "
                + "decoder's PD ports, waits for the prefiller's ready notice on --notice-port (the prefillers' "
                + "pd_proxy_port), sends the request to that decoder and answers with its token ids and the timings. "
                + "GET /status gives the counters. With several prefillers and decoders, each request goes to the one with "
                + "the fewest requests in flight; a decoder that fails is replaced by another."},
        footer = {"The roles are ./lmcache4j pd-worker --role prefiller|decoder; docs/pd.md walks through a deployment.",
                "Exit status: 0 after a graceful stop, 1 when the proxy cannot start, 2 for bad arguments."})
public final class PdProxyCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;
    private final CountDownLatch stop;

    @Option(names = "--host", paramLabel = "H", order = 0,
            description = "address the HTTP API and the notice port bind (default 127.0.0.1)")
    private String host = "127.0.0.1";

    private int port = 8000;
    private int noticePort = 7500;
    private final List<String> prefillers = new ArrayList<>();
    private final List<String> decoders = new ArrayList<>();
    private Path secretFile;
    private Path tokenFile;
    private Duration noticeTimeout = Duration.ofSeconds(5);
    private Duration workerTimeout = Duration.ofMinutes(10);
    private int maxRequests = 64;
    private int maxTokens = 4_096;
    private boolean printWorkerBearer;

    private PdProxyCommand(PrintStream out, PrintStream err, CountDownLatch stop) {
        this.out = out;
        this.err = err;
        this.stop = stop;
    }

    @Option(names = "--port", paramLabel = "N", order = 1, description = "the HTTP API's port, 0 = any free one (default 8000)")
    private void port(String value) {
        port = (int) OptionValues.wholeNumber("--port", value, 0, 65535);
    }

    @Option(names = "--notice-port", paramLabel = "N", order = 2, description = "where prefillers send their ready notices: "
            + "their pd_proxy_port (default 7500)")
    private void noticePort(String value) {
        noticePort = (int) OptionValues.wholeNumber("--notice-port", value, 0, 65535);
    }

    @Option(names = "--prefiller", paramLabel = "H:P", order = 3, description = "a prefiller's HTTP address (pd-worker --role "
            + "prefiller --port P); repeat for several")
    private void prefiller(String value) {
        prefillers.add(address("--prefiller", value));
    }

    @Option(names = "--decoder", paramLabel = "H:P", order = 4, description = "a decoder's HTTP address (pd-worker --role "
            + "decoder --port P); its PD ports are read from its /status; repeat for several")
    private void decoder(String value) {
        decoders.add(address("--decoder", value));
    }

    @Option(names = "--secret-file", paramLabel = "F", order = 5, description = "the deployment secret's file (mode 600), as "
            + "the workers' deployment_secret_file: the notice port demands the token it derives")
    private void secretFile(String value) {
        secretFile = Path.of(value);
    }

    @Option(names = "--token-file", paramLabel = "F", order = 6, description = "a file (mode 600) holding the workers' "
            + "extra_config.p2p_token, when they have no deployment secret")
    private void tokenFile(String value) {
        tokenFile = Path.of(value);
    }

    @Option(names = "--notice-timeout-ms", paramLabel = "MS", order = 7, description = "how long to wait for a request's "
            + "ready notices once its prefiller has answered; then the decoder starts anyway and computes what is missing "
            + "(default 5000)")
    private void noticeTimeout(String value) {
        noticeTimeout = Duration.ofMillis(OptionValues.wholeNumber("--notice-timeout-ms", value, 1, 3_600_000));
    }

    @Option(names = "--worker-timeout", paramLabel = "S", order = 8, description = "the longest one call to a worker may take, "
            + "in seconds (default 600)")
    private void workerTimeout(String value) {
        workerTimeout = OptionValues.seconds("--worker-timeout", value, 86_400);
    }

    @Option(names = "--max-requests", paramLabel = "N", order = 9, description = "requests in flight at most; more are "
            + "answered 503 (default 64)")
    private void maxRequests(String value) {
        maxRequests = (int) OptionValues.wholeNumber("--max-requests", value, 1, 100_000);
    }

    @Option(names = "--max-tokens", paramLabel = "N", order = 10, description = "the largest max_tokens a request may ask "
            + "for (default 4096)")
    private void maxTokens(String value) {
        maxTokens = (int) OptionValues.wholeNumber("--max-tokens", value, 1, 1_000_000);
    }

    @Option(names = "--print-worker-bearer", order = 11, description = "print the bearer token the workers demand (what "
            + "this proxy sends them: Authorization: Bearer TOKEN), from --token-file or --secret-file, and exit")
    private void printWorkerBearer(boolean value) {
        printWorkerBearer = value;
    }

    private static String address(String option, String value) {
        int colon = value.lastIndexOf(':');
        long port;
        try {
            port = colon < 1 ? -1 : Long.parseLong(value.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException(option + " takes host:port (port 1..65535), got '" + CliText.echo(value) + "'");
        }
        return value;
    }


    public static void main(String[] args) {
        CliMain.exit("pd-proxy", () -> run(args, System.out, System.err, null));
    }

    /** Runs the proxy until {@code stop} is counted down (tests) or the JVM is asked to stop ({@code stop} null). */
    static int run(String[] args, PrintStream out, PrintStream err, CountDownLatch stop) {
        return CliMain.execute(new CommandLine(new PdProxyCommand(out, err, stop)), out, err, args);
    }

    @Override
    public Integer call() {
        byte[] token;
        try {
            if (printWorkerBearer) {
                if ((secretFile == null) == (tokenFile == null)) {
                    throw new IllegalArgumentException("--print-worker-bearer needs one of --secret-file or --token-file, "
                            + "as the workers have");
                }
                out.println(PdWorkerServer.authorization(token()).substring("Bearer ".length()));
                out.flush();
                return 0;
            }
            if (prefillers.isEmpty() || decoders.isEmpty()) {
                throw new IllegalArgumentException("give at least one --prefiller and one --decoder (host:port of each "
                        + "pd-worker's HTTP API)");
            }
            if ((secretFile == null) == (tokenFile == null)) {
                throw new IllegalArgumentException("give one of --secret-file (the workers' deployment_secret_file) or "
                        + "--token-file (a file holding their p2p_token): the notice port takes notices only from them");
            }
            InetAddress.getByName(host);
            token = token();
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "pd-proxy", e.getMessage());
        } catch (UnknownHostException e) {
            return CliMain.usageError(err, "pd-proxy", "--host: unknown host: " + CliText.oneLine(e));
        }
        PdProxy proxy;
        try {
            proxy = PdProxy.start(new PdProxy.Settings(host, port, noticePort, prefillers, decoders, token, noticeTimeout,
                    workerTimeout, maxRequests, maxTokens));
        } catch (IOException | RuntimeException e) {
            return CliMain.failure(err, "pd-proxy", "cannot start", e);
        }
        StopSignals.Armed stopping = StopSignals.arm(stop, "lmcache4j-pd-proxy-shutdown");
        out.println("PD proxy: HTTP API on " + host + ":" + proxy.httpAddress().getPort() + " (POST /generate, GET /status), "
                + "ready notices on port " + proxy.noticePort() + "; prefillers " + prefillers + ", decoders " + decoders);
        out.flush();
        stopping.awaitThen(() -> {
            proxy.close();
            out.println("PD proxy stopped: " + proxy.statusNow());
            out.flush();
        });
        return 0;
    }

    private byte[] token() {
        if (secretFile != null) {
            return DeploymentSecret.fromFile(secretFile).peerTransferToken().getBytes(StandardCharsets.UTF_8);
        }
        String text;
        try {
            text = Files.readString(tokenFile, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new IllegalArgumentException("--token-file " + tokenFile + " cannot be read: " + CliText.oneLine(e));
        }
        if (text.length() < 16) {
            throw new IllegalArgumentException("--token-file " + tokenFile + " holds " + text.length() + " characters; the "
                    + "workers' p2p_token has 16 or more");
        }
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
