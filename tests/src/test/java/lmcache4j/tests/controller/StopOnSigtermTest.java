package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The foreground processes an operator runs, {@code controller} and {@code server}, stop gracefully
 * on SIGTERM (a service manager's stop, {@code kill}): they close their sockets, print their final
 * counts and exit 0, as docs/controller.md and docs/operations.md say; not 143, the JVM's status
 * for a signal-initiated shutdown. And a demo stopped so, holding or mid-run, leaves none of the
 * temporary directories it made (its disk tier's chunk files were gigabytes).
 */
class StopOnSigtermTest {
    @TempDir
    Path logs;

    @Test
    void theControllerExitsZeroAfterAGracefulStop() throws Exception {
        ControllerProcess controller = ControllerProcess.start("controller", ControllerProcess.Ports.free(), 256,
                Duration.ofSeconds(30), logs);
        try {
            ChildProcess p = controller.process();
            assertEquals(0, p.sigterm(Duration.ofSeconds(30)), p.output());
            assertTrue(p.lines().stream().anyMatch(l -> l.startsWith("lmcache4j controller: stopped;")), p.output());
        } finally {
            controller.close();
        }
    }

    @Test
    void theLmServerExitsZeroAfterAGracefulStop() throws Exception {
        int port = FreePorts.take(1)[0];
        ChildProcess p = ChildProcess.start("server", List.of("bash", "-c",
                "source \"$1\"; shift; setup_java; run_cli \"$@\"", "server", ControllerProcess.LAUNCHER.toString(),
                "lmcache4j.cli.ServerCommand", "--host", "127.0.0.1", "--port", Integer.toString(port), "--max-size", "0.05"),
                logs, Map.of());
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (p.lines().stream().noneMatch(l -> l.startsWith("lm:// server listening on"))) {
                assertTrue(p.isAlive() && System.nanoTime() < deadline, "the server did not start\n" + p.output());
                Thread.sleep(20);
            }
            assertEquals(0, p.sigterm(Duration.ofSeconds(30)), p.output());
            assertTrue(p.lines().stream().anyMatch(l -> l.startsWith("lm:// server stopped:")), p.output());
        } finally {
            p.close();
        }
    }

    @Test
    void aHoldingDemoStoppedBySigtermLeavesNoTemporaryDirectory() throws Exception {
        Path tmp = Files.createDirectory(logs.resolve("tmp"));
        ChildProcess p = demo(tmp, "--hold", "600", "--requests", "12", "--layers", "1", "--cpu-gb", "0.05", "--json");
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (p.lines().stream().noneMatch(l -> l.startsWith("{"))) { // the report: the hold has begun
                assertTrue(p.isAlive() && System.nanoTime() < deadline, "the demo did not report\n" + p.output());
                Thread.sleep(50);
            }
            List<Path> made = ours(tmp);
            assertEquals(1, made.size(), made.toString());
            assertTrue(chunkFiles(made.get(0)) > 0, "the disk tier holds chunk files while the demo holds");
            p.sigterm(Duration.ofSeconds(30));
            assertEquals(List.of(), ours(tmp), p.output());
        } finally {
            p.close();
        }
    }

    @Test
    void aDemoStoppedMidRunLeavesNoTemporaryDirectory() throws Exception {
        Path tmp = Files.createDirectory(logs.resolve("tmp"));
        ChildProcess p = demo(tmp, "--requests", "1000000", "--layers", "1", "--cpu-gb", "0.05", "--quiet");
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (ours(tmp).isEmpty() || chunkFiles(ours(tmp).get(0)) == 0) { // writing to its disk tier
                assertTrue(p.isAlive() && System.nanoTime() < deadline, "the demo wrote no chunk file\n" + p.output());
                Thread.sleep(50);
            }
            long t0 = System.nanoTime();
            p.sigterm(Duration.ofSeconds(60));
            long millis = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(List.of(), ours(tmp), p.output());
            assertTrue(millis < 30_000, "stopped in " + millis + " ms");
        } finally {
            p.close();
        }
    }

    /** The demo through the launcher, its temporary directories made in {@code tmp}. */
    private ChildProcess demo(Path tmp, String... args) throws IOException {
        List<String> command = new java.util.ArrayList<>(List.of("bash", "-c", "source \"$1\"; shift; setup_java; "
                + "run_cli \"$@\"", "demo", ControllerProcess.LAUNCHER.toString(), "lmcache4j.cli.DemoCommand"));
        command.addAll(List.of(args));
        return ChildProcess.start("demo", command, logs, Map.of("JAVA_TOOL_OPTIONS", "-Djava.io.tmpdir=" + tmp));
    }

    /** What lmcache4j made in {@code tmp}. */
    private static List<Path> ours(Path tmp) throws IOException {
        try (Stream<Path> s = Files.list(tmp)) {
            return s.filter(f -> f.getFileName().toString().startsWith("lmcache4j-")).toList();
        }
    }

    private static long chunkFiles(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(f -> f.getFileName().toString().endsWith(".lmc")).count();
        } catch (java.io.UncheckedIOException | java.nio.file.NoSuchFileException e) {
            return 0; // changing under the walk
        }
    }
}
