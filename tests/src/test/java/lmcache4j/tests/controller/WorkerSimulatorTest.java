package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.tests.TestPython;

/**
 * The Python side of the controller tests on its own: the simulator's message table re-encodes
 * every golden vector (generated from LMCache's message.py) to the same bytes, and the simulator
 * gives up cleanly, saying so, when no controller answers.
 */
class WorkerSimulatorTest {
    @TempDir
    Path tmp;

    @Test
    void theSimulatorEncodesEveryGoldenVectorByteForByte() throws Exception {
        TestPython.require();
        try (ChildProcess p = ChildProcess.start("self-check", TestPython.script("lmcache_worker_sim.py",
                List.of("--self-check", TestPython.GOLDEN.toString())), tmp, Map.of())) {
            Map<String, Object> result = p.awaitEvent("self_check", Duration.ofSeconds(60));
            assertEquals(List.of(), result.get("failed"), p.output());
            assertTrue((Long) result.get("vectors") >= 60, "every message type has a vector: " + result);
            assertEquals(0, p.awaitExit(Duration.ofSeconds(10)), p.output());
        }
    }

    @Test
    void withNoControllerTheSimulatorReportsTheTimeoutAndExits() throws Exception {
        int[] ports = FreePorts.take(2); // nothing listens on either
        try (WorkerSimulator sim = WorkerSimulator.start("lonely", ports[0], ports[1], tmp,
                "--register-timeout", "1", "--reply-timeout", "0.2")) {
            Map<String, Object> started = sim.process().awaitEvent("started", WorkerSimulator.WAIT);
            assertTrue((Long) started.get("rep_port") > 0, started.toString());
            sim.process().awaitEvent("register_timeout", WorkerSimulator.WAIT);
            assertEquals(3, sim.process().awaitExit(Duration.ofSeconds(20)), sim.process().output());
        }
    }
}
