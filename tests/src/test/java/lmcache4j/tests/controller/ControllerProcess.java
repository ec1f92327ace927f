package lmcache4j.tests.controller;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import lmcache4j.engine.security.DeploymentSecret;

/**
 * {@code ./lmcache4j controller} in a process of its own, on loopback ports the test chose, so it
 * can be killed and started again on the same addresses (the workers keep theirs). Launched through
 * the launcher's own {@code run_cli} (the module path of the built jars, the same JVM flags as
 * every command) rather than {@code ./lmcache4j controller}, which would first check whether the
 * build is stale and could start Maven inside the test run. Ready when {@code GET /instances} answers.
 */
final class ControllerProcess implements AutoCloseable {
    static final Path LAUNCHER = Path.of("..", "lmcache4j").toAbsolutePath().normalize();
    static final String MAIN = "lmcache4j.cli.ControllerCommand";

    /** The four loopback ports of one controller: workers' PUSH, requests, heartbeats, HTTP. */
    record Ports(int pull, int reply, int heartbeat, int http) {
        static Ports free() {
            int[] p = FreePorts.take(4);
            return new Ports(p[0], p[1], p[2], p[3]);
        }
    }

    private final ChildProcess process;
    private final ControllerHttp http;

    private ControllerProcess(ChildProcess process, ControllerHttp http) {
        this.process = process;
        this.http = http;
    }

    /** Starts a controller on {@code ports}, hashing as the tests' engines do (chunk size, seed "0"). */
    static ControllerProcess start(String name, Ports ports, int chunkSize, Duration workerTimeout, Path logDir,
                                   String... extra) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", "-c",
                "source \"$1\"; shift; setup_java; run_cli \"$@\"", "controller", LAUNCHER.toString(), MAIN,
                "--pull", "127.0.0.1:" + ports.pull(), "--reply", "127.0.0.1:" + ports.reply(),
                "--heartbeat", "127.0.0.1:" + ports.heartbeat(), "--http", "127.0.0.1:" + ports.http(),
                "--chunk-size", Integer.toString(chunkSize), "--hash-seed", PromptChunks.SEED,
                "--worker-timeout", Double.toString(workerTimeout.toMillis() / 1000.0)));
        cmd.addAll(List.of(extra));
        if (!cmd.contains("--secret-file")) {
            cmd.add("--insecure"); // loopback, and LMCache's Python workers among the tests' clients
        }
        int secretAt = cmd.indexOf("--secret-file");
        Optional<String> bearer = secretAt < 0 ? Optional.empty()
                : Optional.of(DeploymentSecret.fromFile(Path.of(cmd.get(secretAt + 1))).bearerToken());
        ChildProcess p = ChildProcess.start(name, cmd, logDir, Map.of());
        ControllerProcess c = new ControllerProcess(p, new ControllerHttp(ports.http(), bearer));
        try {
            c.http.awaitUp(Duration.ofSeconds(60), p);
        } catch (AssertionError | RuntimeException e) {
            p.close();
            throw e;
        }
        return c;
    }

    ControllerHttp http() {
        return http;
    }

    ChildProcess process() {
        return process;
    }

    /** SIGKILL: the index is gone, as after a crash. */
    void kill9() throws InterruptedException {
        process.kill9();
    }

    @Override
    public void close() throws InterruptedException {
        process.close();
    }
}
