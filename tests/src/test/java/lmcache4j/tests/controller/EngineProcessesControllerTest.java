package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.json.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * lmcache4j engines in processes of their own ({@code ./lmcache4j demo --controller}, each a JVM
 * with its own CPU tier serving its own workload) report to a controller process: a lookup of the
 * prompt each wrote names that instance; {@code kill -9} of one removes its entries once its
 * heartbeats stop; a controller killed and started again on the same addresses is repopulated by the
 * full sync its heartbeat replies ask the surviving engine for.
 */
class EngineProcessesControllerTest {
    static final int CHUNK = 256;
    /** The controller drops a worker silent this long; the engines heartbeat every 10 s (LMCache's default here). */
    static final Duration WORKER_TIMEOUT = Duration.ofSeconds(25);

    @TempDir
    Path tmp;

    @Test
    void lookupsNameTheEngineThatStoredAPromptThroughKillsOfAnEngineAndOfTheController() throws Exception {
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        List<AutoCloseable> processes = new ArrayList<>();
        try {
            ControllerProcess controller = ControllerProcess.start("controller", ports, CHUNK, WORKER_TIMEOUT, tmp);
            processes.add(controller);
            Demo a = Demo.start("engine-a", 1, ports, tmp);
            processes.add(a.process);
            Demo b = Demo.start("engine-b", 2, ports, tmp);
            processes.add(b.process);
            int[] promptA = a.awaitPrompt();
            int[] promptB = b.awaitPrompt();

            Map<String, Object> foundA = controller.http().awaitLookup(promptA,
                    r -> "engine-a".equals(r.get("best_instance")), Duration.ofSeconds(30), "engine-a named for its prompt");
            assertTrue(ControllerHttp.tokensOf(foundA, "engine-a") >= CHUNK, foundA.toString());
            controller.http().awaitLookup(promptB, r -> "engine-b".equals(r.get("best_instance")), Duration.ofSeconds(30),
                    "engine-b named for its prompt");

            a.process.kill9();
            controller.http().awaitLookup(promptA, r -> ControllerHttp.tokensOf(r, "engine-a") == 0,
                    WORKER_TIMEOUT.plusSeconds(40), "engine-a's entries dropped after kill -9 (heartbeat timeout)");

            controller.kill9();
            ControllerProcess restarted = ControllerProcess.start("controller-2", ports, CHUNK, WORKER_TIMEOUT, tmp);
            processes.add(restarted);
            restarted.http().awaitLookup(promptB, r -> "engine-b".equals(r.get("best_instance")), Duration.ofSeconds(60),
                    "engine-b back in the restarted controller's index through its full sync");
            // The new process started with an empty index, so the entries can only have come from the engine's full
            // sync (asking "is it empty?" first would race a fast re-registration): its batches were counted.
            String metrics = restarted.http().metrics();
            assertTrue(metrics.lines().anyMatch(l -> l.startsWith("lmcache4j_controller_messages_total{")
                    && l.contains("type=\"FullSyncBatchMsg\"") && Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1)) >= 1),
                    "the restarted controller received the engine's full sync: " + metrics);
            assertTrue(b.process.isAlive(), "the engine served on through the controller's death: " + b.process.output());
        } finally {
            for (int i = processes.size() - 1; i >= 0; i--) {
                processes.get(i).close();
            }
        }
    }

    /** One {@code ./lmcache4j demo --controller ... --hold}: a small run, then the engine stays up and registered. */
    private record Demo(ChildProcess process, Path prompt) {
        static Demo start(String instance, int seed, ControllerProcess.Ports ports, Path dir) throws IOException {
            Path prompt = dir.resolve(instance + "-prompt.json");
            List<String> cmd = List.of("bash", "-c", "source \"$1\"; shift; setup_java; run_cli \"$@\"", instance,
                    ControllerProcess.LAUNCHER.toString(), "lmcache4j.cli.DemoCommand",
                    "--requests", "12", "--layers", "2", "--cpu-gb", "0.07", "--no-disk", "--quiet", "--json",
                    "--seed", Integer.toString(seed), "--controller", "127.0.0.1:" + ports.pull() + ",127.0.0.1:" + ports.reply(),
                    "--instance-id", instance, "--prompt-out", prompt.toString(), "--hold", "300");
            return new Demo(ChildProcess.start(instance, cmd, dir, Map.of()), prompt);
        }

        int[] awaitPrompt() throws IOException, InterruptedException {
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (!Files.exists(prompt)) { // renamed into place whole by the demo
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new AssertionError("the demo wrote no prompt: " + process.output());
                }
                Thread.sleep(50);
            }
            return ((List<?>) Json.parseObject(Files.readString(prompt)).get("tokens")).stream()
                    .mapToInt(v -> ((Number) v).intValue()).toArray();
        }
    }
}
