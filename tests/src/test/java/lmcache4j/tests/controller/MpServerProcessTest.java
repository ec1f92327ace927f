package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./lmcache4j mp-server} as a process: the launcher gives it its fixed heap, it creates its
 * shared-memory pool under {@code /dev/shm}, and SIGTERM stops it with the pool removed.
 */
class MpServerProcessTest {
    @TempDir
    Path logs;

    @Test
    void theMpServerRunsWithItsHeapAndRemovesItsPoolOnSigterm() throws Exception {
        String name = "lmcache4j-mp-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        Path pool = Path.of("/dev/shm", name);
        try (ChildProcess p = ChildProcess.start("mp-server", List.of("bash", "-c",
                "source \"$1\"; shift; setup_java; run_cli \"$@\"", "mp-server", ControllerProcess.LAUNCHER.toString(),
                "lmcache4j.cli.MpServerCommand", "--port", "0", "--http-port", "-1", "--l1-size", "0.01",
                "--shm-name", name), logs, Map.of())) {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (p.lines().stream().noneMatch(l -> l.startsWith("mp-server listening on"))) {
                assertTrue(p.isAlive() && System.nanoTime() < deadline, "the MP server did not start\n" + p.output());
                Thread.sleep(20);
            }
            assertTrue(Files.exists(pool), "the pool is in /dev/shm while the server runs");
            String cmdline = new String(Files.readAllBytes(Path.of("/proc", Long.toString(p.pid()), "cmdline")),
                    StandardCharsets.UTF_8);
            assertTrue(List.of(cmdline.split("\0")).contains("-Xmx768m"), cmdline);
            assertEquals(0, p.sigterm(Duration.ofSeconds(30)), p.output());
            assertTrue(p.lines().stream().anyMatch(l -> l.equals("mp-server stopped")), p.output());
        }
        assertFalse(Files.exists(pool), "SIGTERM removed the pool");
    }

    @Test
    void badArgumentsExitTwoAndCreateNothing() throws Exception {
        try (ChildProcess p = ChildProcess.start("mp-server-bad", List.of("bash", "-c",
                "source \"$1\"; shift; setup_java; run_cli \"$@\"", "mp-server", ControllerProcess.LAUNCHER.toString(),
                "lmcache4j.cli.MpServerCommand", "--l1-size", "-3"), logs, Map.of())) {
            assertEquals(2, p.awaitExit(Duration.ofSeconds(60)), p.output());
        }
    }
}
