package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import lmcache4j.bench.demo.ServingSimulator;
import lmcache4j.engine.json.Json;
import lmcache4j.engine.security.CurveGate;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerLookup;
import lmcache4j.server.controller.ControllerServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./lmcache4j demo --controller}: the demo's engine registers with a real cache controller (in
 * this process, on free loopback ports), reports what it caches, and a lookup of the prompt it wrote
 * with {@code --prompt-out} names its instance while {@code --hold} keeps it up. A controller that
 * never answers is exit status 4, not a pass.
 */
class DemoControllerTest {
    private static final String[] TINY_RUN = {"--requests", "16", "--layers", "2", "--cpu-gb", "0.07", "--seed", "7",
            "--no-disk", "--quiet"};

    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... more) {
        String[] args = java.util.Arrays.copyOf(TINY_RUN, TINY_RUN.length + more.length);
        System.arraycopy(more, 0, args, TINY_RUN.length, more.length);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = DemoCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aLookupOfThePromptTheDemoWroteNamesItsInstanceWhileItHolds(@TempDir Path dir) throws Exception {
        // Every demo hashes with hash_seed "0", whatever its workload seed: the controller hashes the same way.
        ControllerConfig config = ControllerConfig.loopbackAnyPorts().withHashSeed(Optional.of(ServingSimulator.Settings.HASH_SEED));
        List<String> registrations = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                registrations.add(java.text.MessageFormat.format(record.getMessage(), record.getParameters()));
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger registryLog = Logger.getLogger("lmcache4j.server.controller.registry.WorkerRegistry");
        Level registryLevel = registryLog.getLevel();
        registryLog.setLevel(Level.INFO); // the demo quiets lmcache4j's INFO logs while it runs in this JVM
        registryLog.addHandler(capture);
        try (ControllerServer controller = ControllerServer.start(config)) {
            Path prompt = dir.resolve("prompt.json");
            String link = controller.pullEndpoint() + "," + controller.replyEndpoint();
            CompletableFuture<Run> demo = CompletableFuture.supplyAsync(() -> run("--json", "--controller", link,
                    "--instance-id", "demo-a", "--prompt-out", prompt.toString(), "--hold", "5"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!Files.exists(prompt) && !demo.isDone() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(Files.exists(prompt), "the demo wrote its prompt: " + (demo.isDone() ? demo.join() : "still running"));
            int[] tokens = ((java.util.List<?>) Json.parseObject(Files.readString(prompt)).get("tokens")).stream()
                    .mapToInt(v -> ((Number) v).intValue()).toArray();
            ControllerLookup.Answer answer = controller.lookup().lookup(tokens);
            assertEquals("demo-a", answer.best().orElseThrow().instanceId(), "the lookup names the demo's instance: " + answer);
            assertTrue(answer.best().get().tokens() >= 256, "at least a chunk of the prompt is held: " + answer);

            Run r = demo.get(60, TimeUnit.SECONDS);
            assertEquals(0, r.exit(), r.err());
            assertTrue(r.out().contains("\"controller_registered\": true"), r.out());
            assertTrue(r.err().contains("holding the engine 5 s (registered with the controller as demo-a)"), r.err());
            // The worker's control port, a free one (five digits), as a port: "127.0.0.1:58002", never "58,002".
            assertTrue(registrations.stream().anyMatch(l -> l.matches("worker demo-a:0 registered at 127\\.0\\.0\\.1:\\d+")),
                    "the registration's log line: " + registrations);
        } finally {
            registryLog.removeHandler(capture);
            registryLog.setLevel(registryLevel);
        }
    }

    @Test
    void aControllerThatNeverAnswersIsExitStatusFourWithTheReason() throws Exception {
        int silent;
        int alsoSilent;
        try (ServerSocket a = new ServerSocket(0); ServerSocket b = new ServerSocket(0)) {
            silent = a.getLocalPort();
            alsoSilent = b.getLocalPort();
        }
        Run r = run("--controller", "127.0.0.1:" + silent + ",127.0.0.1:" + alsoSilent);
        assertEquals(4, r.exit(), r.out() + r.err());
        assertTrue(r.err().contains("never acknowledged the registration"), r.err());
        assertTrue(r.out().contains("NOT registered"), r.out());
    }

    /**
     * A demo without the secret against a secured controller: the demo's exit-4 reason says to pass the
     * secret, and the controller counts the refused handshakes and logs them (CURVE alone says nothing).
     */
    @Test
    void anEngineWithoutTheSecretIsToldToPassItAndTheControllerCountsAndLogsIt(@TempDir Path dir) throws Exception {
        DeploymentSecret secret = DeploymentSecret.createFile(dir.resolve("secret"));
        ControllerConfig config = ControllerConfig.loopbackAnyPorts().withHashSeed(Optional.of(ServingSimulator.Settings.HASH_SEED))
                .withSecretFile(Optional.of(dir.resolve("secret")));
        List<String> warnings = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                    warnings.add(record.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger gateLog = Logger.getLogger(CurveGate.class.getName());
        gateLog.addHandler(capture);
        try (ControllerServer controller = ControllerServer.start(config)) {
            Run r = run("--controller", controller.pullEndpoint() + "," + controller.replyEndpoint());
            assertEquals(4, r.exit(), r.out() + r.err());
            assertTrue(r.err().contains("never acknowledged the registration") && r.err().contains("--secret-file FILE")
                    && r.err().contains("deployment_secret_file"), "the reason says to pass the secret: " + r.err());
            String refused = controller.metrics().render().lines()
                    .filter(l -> l.startsWith("lmcache4j_controller_curve_handshakes_refused_total ")).findFirst().orElseThrow();
            assertTrue(Double.parseDouble(refused.substring(refused.indexOf(' ') + 1)) >= 1, refused);
            assertTrue(warnings.stream().anyMatch(w -> w.contains("does not speak CURVE") && w.contains("deployment_secret_file")),
                    "the controller logs the refusal: " + warnings);
        } finally {
            gateLog.removeHandler(capture);
        }
    }

    @Test
    void badControllerArgumentsAreUsageErrors() {
        assertEquals(2, run("--controller", "127.0.0.1:8300").exit());
        assertEquals(2, run("--controller", "127.0.0.1:x,127.0.0.1:8400").exit());
        assertEquals(2, run("--instance-id", "lonely").exit());
    }
}
