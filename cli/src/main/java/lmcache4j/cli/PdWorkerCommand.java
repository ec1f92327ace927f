package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.bench.model.ModelSource;
import lmcache4j.bench.pd.JlamaPdWorker;
import lmcache4j.bench.pd.PdRoleConfig;
import lmcache4j.engine.config.ConfigException;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.server.pd.PdWorkerServer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j pd-worker --role prefiller|decoder [--model DIR] [--port N] [--file F] [--set k=v ...]}:
 * one disaggregated-prefill role over a Jlama model in the foreground until SIGINT/SIGTERM. Exit
 * status 0 after a graceful stop, 1 when it cannot start, 2 for bad arguments or config.
 */
@Command(name = "pd-worker", description = {
        "Runs one disaggregated-prefill role over a Jlama model in the foreground until Ctrl-C / SIGTERM. A prefiller "
                + "(pd_role: sender) computes each prompt's KV one 256-position batch at a time and pushes each chunk to the "
                + "decoder the proxy names as soon as its batch is computed, then tells the proxy (pd_proxy_host, "
                + "pd_proxy_port). A decoder (pd_role: receiver) holds pushed chunks in its PD buffer (pd_buffer_size) "
                + "behind its PD ports (pd_peer_host, pd_peer_init_port, pd_peer_alloc_port) and generates from them, "
                + "computing only what did not arrive. A colocated worker does both in one process (the baseline). The "
                + "engine config comes from --file, LMCACHE_* variables and --set, as for ./lmcache4j config; the role "
                + "fills in enable_pd, pd_role, pd_buffer_device: cpu, pd_buffer_size (1 GiB), a decoder's pd_peer_host "
                + "(--host) and ports (any free one) and hash_seed 0 where they are unset. Both roles need the deployment's "
                + "token: extra_config.p2p_token or deployment_secret_file."},
        footer = {"HTTP API: POST /prefill (prefiller), POST /decode (decoder), POST /generate (colocated), GET /status. "
                + "A prefiller or decoder serves only calls with the proxy's bearer, which the deployment's token derives.",
                "The proxy is ./lmcache4j pd-proxy; docs/pd.md walks through a deployment.",
                "Exit status: 0 after a graceful stop, 1 when the role cannot start, 2 for bad arguments or config."})
public final class PdWorkerCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;
    private final CountDownLatch stop;
    private final ConfigLoader.Builder loader;

    private JlamaPdWorker.Role role;
    private Optional<Path> model = Optional.empty();

    @Option(names = "--host", paramLabel = "H", order = 2,
            description = "address the HTTP API (and a decoder's PD ports, unless pd_peer_host is set) bind (default 127.0.0.1)")
    private String host = "127.0.0.1";

    private int port = 0;

    private PdWorkerCommand(Map<String, String> env, PrintStream out, PrintStream err, CountDownLatch stop) {
        this.out = out;
        this.err = err;
        this.stop = stop;
        this.loader = ConfigLoader.builder().environment(env)
                .warnings(w -> err.println("lmcache4j pd-worker: warning: " + CliText.escape(w)));
    }

    // Checked in call(), not by picocli's required: an unknown option is then named first, as in every command.
    @Option(names = "--role", paramLabel = "R", order = 0, description = "prefiller, decoder or colocated (required)")
    private void role(String value) {
        role = JlamaPdWorker.Role.of(value);
    }

    @Option(names = "--model", paramLabel = "DIR", order = 1, description = "a Hugging Face model directory Jlama loads "
            + "(default: lmcache4j's synthetic Llama, written on first use under ~/.cache/lmcache4j); every role of a "
            + "deployment must load the same model")
    private void model(String value) {
        model = Optional.of(Path.of(value));
    }

    @Option(names = "--port", paramLabel = "N", order = 3, description = "the HTTP API's port, 0 = any free one (default 0; "
            + "the address is printed at start)")
    private void port(String value) {
        port = (int) OptionValues.wholeNumber("--port", value, 0, 65535);
    }

    @Option(names = "--file", paramLabel = "PATH", order = 4,
            description = "the engine's YAML config file (default: $LMCACHE_CONFIG_FILE, else none)")
    private void file(String path) {
        loader.file(Path.of(path));
    }

    @Option(names = "--set", paramLabel = "key=value", order = 5, description = "set a config field, read like an LMCACHE_* "
            + "variable (comma lists, JSON for extra_config); may be repeated")
    private void set(String keyValue) {
        int eq = keyValue.indexOf('=');
        if (eq <= 0) {
            throw new IllegalArgumentException("--set takes key=value, got '" + CliText.echo(keyValue) + "'");
        }
        loader.setText(keyValue.substring(0, eq).strip(), keyValue.substring(eq + 1), "--set");
    }


    public static void main(String[] args) {
        CliMain.exit("pd-worker", () -> run(List.of(args), System.getenv(), System.out, System.err, null));
    }

    /** Runs the role until {@code stop} is counted down (tests) or the JVM is asked to stop ({@code stop} null). */
    static int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err, CountDownLatch stop) {
        return CliMain.execute(new CommandLine(new PdWorkerCommand(env, out, err, stop)), out, err,
                args.toArray(String[]::new));
    }

    @Override
    public Integer call() {
        if (role == null) {
            return CliMain.usageError(err, "pd-worker", "--role is required: prefiller, decoder or colocated");
        }
        LMCacheEngineConfig config;
        try {
            config = PdRoleConfig.build(role, loader, host, note -> err.println("lmcache4j pd-worker: " + note));
        } catch (ConfigException e) {
            e.getMessage().lines().map(CliText::escape).forEach(line -> err.println("lmcache4j pd-worker: " + line.strip()));
            return 2;
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "pd-worker", e.getMessage());
        }
        Optional<String> missing = ModelRuns.missingModules();
        if (missing.isPresent()) {
            err.println("lmcache4j pd-worker: " + missing.get());
            return 1;
        }
        ModelSource source;
        try {
            source = ModelSource.resolve(model);
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "pd-worker", e.getMessage());
        }
        AbstractModel loaded = source.load();
        JlamaPdWorker worker;
        PdWorkerServer http;
        try {
            worker = JlamaPdWorker.start(role, loaded, source.name(), config);
        } catch (IOException | RuntimeException e) {
            loaded.close();
            return CliMain.failure(err, "pd-worker", "cannot start the " + role.label(), e);
        }
        try {
            http = PdWorkerServer.start(new InetSocketAddress(host, port), 16, worker, worker.pdToken());
        } catch (IOException | RuntimeException e) {
            worker.close();
            loaded.close();
            return CliMain.failure(err, "pd-worker", "cannot start the HTTP API on " + host + ":" + port, e);
        }
        StopSignals.Armed stopping = StopSignals.arm(stop, "lmcache4j-pd-worker-shutdown");
        out.println("PD " + role.label() + " (" + source.name() + "): HTTP API on " + host + ":" + http.address().getPort()
                + worker.receiver().map(r -> "; PD ports on " + r.peer().host() + ": alloc " + r.peer().allocPort()
                + ", transfer " + r.peer().initPort()).orElse(""));
        out.flush();
        stopping.awaitThen(() -> {
            http.close();
            worker.close();
            loaded.close();
            out.println("PD " + role.label() + " stopped");
            out.flush();
        });
        return 0;
    }
}
