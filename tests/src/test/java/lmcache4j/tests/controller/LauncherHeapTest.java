package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher starts the {@code lm://} server with a heap sized from {@code --max-size} (256 MiB
 * plus a sixteenth of the pool), not the JVM's default quarter of the machine, in
 * which a flood of small puts left gigabytes of garbage; {@code LMCACHE4J_HEAP} overrides it.
 */
class LauncherHeapTest {
    @TempDir
    Path logs;

    @Test
    void theServersHeapFollowsMaxSizeUnlessTheOperatorSetsIt() throws Exception {
        assertTrue(jvmArguments(Map.of(), "0.25").contains("-Xmx272m"));
        List<String> overridden = jvmArguments(Map.of("LMCACHE4J_HEAP", "300m"), "0.25");
        assertTrue(overridden.contains("-Xmx300m") && !overridden.contains("-Xmx272m"), overridden.toString());
    }

    /**
     * 256 MiB + 48 B an index entry + (queued + 2) orchestration frames + the HTTP bodies being read
     * + 12 KiB a ZeroMQ connection (3 a worker, and 256 more, unless --max-connections says).
     */
    @Test
    void theControllersHeapFollowsItsCaps() throws Exception {
        assertEquals("-Xmx1587m", heapFlag("lmcache4j.cli.ControllerCommand", "--insecure"));
        assertEquals("-Xmx577m", heapFlag("lmcache4j.cli.ControllerCommand", "--max-entries", "1000000", "--max-frame-mb", "16"));
        assertEquals("-Xmx1444m", heapFlag("lmcache4j.cli.ControllerCommand", "--max-workers", "16"));
        assertEquals("-Xmx1441m", heapFlag("lmcache4j.cli.ControllerCommand", "--max-connections", "100"));
        assertEquals("", heapFlag("lmcache4j.cli.ControllerCommand", "--max-entries", "lots"), "the controller refuses it");
    }

    private static String heapFlag(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", "-c", "source \"$1\"; shift; heap_flag \"$@\"", "heap",
                ControllerProcess.LAUNCHER.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertEquals(0, p.waitFor(), out);
        return out;
    }

    /** The command line of the server's JVM (the launcher execs it), read from /proc once it listens. */
    private List<String> jvmArguments(Map<String, String> env, String maxSize) throws Exception {
        int port = FreePorts.take(1)[0];
        try (ChildProcess p = ChildProcess.start("server", List.of("bash", "-c",
                "source \"$1\"; shift; setup_java; run_cli \"$@\"", "server", ControllerProcess.LAUNCHER.toString(),
                "lmcache4j.cli.ServerCommand", "--host", "127.0.0.1", "--port", Integer.toString(port), "--max-size", maxSize),
                logs, env)) {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (p.lines().stream().noneMatch(l -> l.startsWith("lm:// server listening on"))) {
                assertTrue(p.isAlive() && System.nanoTime() < deadline, "the server did not start\n" + p.output());
                Thread.sleep(20);
            }
            String cmdline = new String(Files.readAllBytes(Path.of("/proc", Long.toString(p.pid()), "cmdline")),
                    StandardCharsets.UTF_8);
            p.sigterm(Duration.ofSeconds(30));
            return List.of(cmdline.split("\0"));
        }
    }
}
