package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The foreground processes an operator runs, {@code controller} and {@code server}, stop gracefully
 * on SIGTERM (a service manager's stop, {@code kill}): they close their sockets, print their final
 * counts and exit 0, as docs/controller.md and docs/operations.md say; not 143, the JVM's status
 * for a signal-initiated shutdown.
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
}
