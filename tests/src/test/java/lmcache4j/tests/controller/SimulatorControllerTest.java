package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.tests.TestPython;

/**
 * A controller process fed by LMCache-format workers (the Python simulator: LMCache's exact
 * encodings over pyzmq): its lookups answer from what they pushed, an evict shortens the answer,
 * a worker that stops heartbeating loses its entries, and a restarted controller is repopulated by
 * the full sync its heartbeat replies ask for.
 */
class SimulatorControllerTest {
    static final int CHUNK = 256;
    static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path tmp;

    @Test
    void anLmcacheWorkersOwnKeysAreFoundByATokenLookup() throws Exception {
        // The simulator keys the chunks itself, with LMCache's token-database formula in Python; the
        // controller hashes the lookup's tokens in Java: the integers must coincide.
        TestPython.require();
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        int[] tokens = PromptChunks.randomTokens(7, 5 * CHUNK + 17);
        try (ControllerProcess controller = ControllerProcess.start("controller", ports, CHUNK, Duration.ofSeconds(30), tmp);
             WorkerSimulator lmcache = WorkerSimulator.start("lmcache-worker", ports.reply(), ports.pull(), tmp,
                     "--chunk-size", Integer.toString(CHUNK), "--hash-seed", PromptChunks.SEED)) {
            lmcache.awaitRegistered();
            lmcache.admitKeyedByLmcache(tokens, WorkerSimulator.CPU);
            Map<String, Object> found = controller.http().awaitLookup(tokens,
                    r -> ControllerHttp.tokensOf(r, "lmcache-worker") == 5 * CHUNK, WAIT, "the LMCache worker's 5 chunks");
            assertEquals("lmcache-worker", found.get("best_instance"), found.toString());
            assertEquals(0, lmcache.quit(), lmcache.process().output());
        }
    }

    @Test
    void aLookupNamesTheSimulatorThatPushedThePromptsChunks() throws Exception {
        TestPython.require();
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        PromptChunks prompt = PromptChunks.of(PromptChunks.randomTokens(1, 4 * CHUNK + 100), CHUNK);
        PromptChunks other = PromptChunks.of(PromptChunks.randomTokens(2, 2 * CHUNK), CHUNK);
        try (ControllerProcess controller = ControllerProcess.start("controller", ports, CHUNK, Duration.ofSeconds(30), tmp);
             WorkerSimulator a = WorkerSimulator.start("sim-a", ports.reply(), ports.pull(), tmp, "--batch-size", "3");
             WorkerSimulator b = WorkerSimulator.start("sim-b", ports.reply(), ports.pull(), tmp)) {
            a.awaitRegistered();
            b.awaitRegistered();
            a.admit(prompt, WorkerSimulator.CPU);
            b.admit(other, WorkerSimulator.DISK);

            Map<String, Object> found = controller.http().awaitLookup(prompt.tokens(),
                    r -> ControllerHttp.tokensOf(r, "sim-a") == 4 * CHUNK, WAIT, "sim-a holding 4 chunks");
            assertEquals("sim-a", found.get("best_instance"), found.toString());
            assertEquals(WorkerSimulator.CPU, found.get("best_location"), found.toString());
            assertEquals(0L, ControllerHttp.tokensOf(found, "sim-b"), "sim-b holds none of this prompt: " + found);

            Map<String, Object> onDisk = controller.http().lookup(other.tokens());
            assertEquals("sim-b", onDisk.get("best_instance"), onDisk.toString());
            assertEquals(WorkerSimulator.DISK, onDisk.get("best_location"), onDisk.toString());

            a.evict(prompt, WorkerSimulator.CPU, 2); // chunks 2 and 3 evicted: a 2-chunk prefix is left
            controller.http().awaitLookup(prompt.tokens(), r -> ControllerHttp.tokensOf(r, "sim-a") == 2 * CHUNK, WAIT,
                    "sim-a's prefix shortened to 2 chunks by its evicts");
            assertEquals(0, a.quit(), a.process().output());
            controller.http().awaitLookup(prompt.tokens(), r -> ControllerHttp.tokensOf(r, "sim-a") == 0, WAIT,
                    "sim-a's entries gone after its DeRegisterMsg");
        }
    }

    @Test
    void aSimulatorThatStopsHeartbeatingIsDroppedWithItsEntries() throws Exception {
        TestPython.require();
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        PromptChunks prompt = PromptChunks.of(PromptChunks.randomTokens(3, 3 * CHUNK), CHUNK);
        try (ControllerProcess controller = ControllerProcess.start("controller", ports, CHUNK, Duration.ofSeconds(2), tmp);
             WorkerSimulator a = WorkerSimulator.start("sim-a", ports.reply(), ports.pull(), tmp, "--heartbeat-interval", "0.3")) {
            a.awaitRegistered();
            a.admit(prompt, WorkerSimulator.CPU);
            controller.http().awaitLookup(prompt.tokens(), r -> ControllerHttp.tokensOf(r, "sim-a") == 3 * CHUNK, WAIT, "sim-a");
            a.process().kill9(); // no DeRegisterMsg: only the missing heartbeats tell
            controller.http().awaitLookup(prompt.tokens(), r -> ControllerHttp.tokensOf(r, "sim-a") == 0, WAIT,
                    "sim-a dropped after the 2 s heartbeat timeout");
        }
    }

    @Test
    void aRestartedControllerIsRepopulatedByFullSync() throws Exception {
        TestPython.require();
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        PromptChunks prompt = PromptChunks.of(PromptChunks.randomTokens(4, 5 * CHUNK), CHUNK);
        try (WorkerSimulator a = WorkerSimulator.start("sim-a", ports.reply(), ports.pull(), tmp,
                "--heartbeat-interval", "0.3", "--sync-batch-size", "2")) {
            try (ControllerProcess first = ControllerProcess.start("controller-1", ports, CHUNK, Duration.ofSeconds(30), tmp)) {
                a.awaitRegistered();
                a.admit(prompt, WorkerSimulator.CPU);
                first.http().awaitLookup(prompt.tokens(), r -> ControllerHttp.tokensOf(r, "sim-a") == 5 * CHUNK, WAIT, "sim-a");
                first.kill9();
            }
            a.process().awaitEvent("controller_down", WAIT);
            try (ControllerProcess second = ControllerProcess.start("controller-2", ports, CHUNK, Duration.ofSeconds(30), tmp)) {
                Map<String, Object> sync = a.process().awaitEvent("full_sync_done", WAIT);
                assertEquals(5L, sync.get("keys"), sync.toString());
                assertEquals(3L, sync.get("batches"), "5 keys in batches of 2: " + sync);
                Map<String, Object> found = second.http().awaitLookup(prompt.tokens(),
                        r -> ControllerHttp.tokensOf(r, "sim-a") == 5 * CHUNK, WAIT, "sim-a's chunks back after the full sync");
                assertEquals("sim-a", found.get("best_instance"));
            }
        }
    }

    @Test
    void theControllerSurvivesAFuzzLoopOnItsSocketsAndHttpApiAndCountsWhatItDropped() throws Exception {
        TestPython.require();
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        PromptChunks prompt = PromptChunks.of(PromptChunks.randomTokens(5, 2 * CHUNK), CHUNK);
        try (ControllerProcess controller = ControllerProcess.start("controller", ports, CHUNK, Duration.ofSeconds(30), tmp);
             WorkerSimulator a = WorkerSimulator.start("sim-a", ports.reply(), ports.pull(), tmp)) {
            a.awaitRegistered();
            a.admit(prompt, WorkerSimulator.CPU);
            controller.http().awaitLookup(prompt.tokens(), r -> ControllerHttp.tokensOf(r, "sim-a") == 2 * CHUNK, WAIT, "sim-a");
            try (ChildProcess fuzz = ChildProcess.start("fuzz", TestPython.script("controller_fuzz.py", java.util.List.of(
                    "--pull", "tcp://127.0.0.1:" + ports.pull(), "--reply", "tcp://127.0.0.1:" + ports.reply(),
                    "--http", "127.0.0.1:" + ports.http(), "--golden", TestPython.GOLDEN.toString(),
                    "--frames", "3000", "--http-requests", "300", "--seconds", "60")), tmp, Map.of())) {
                Map<String, Object> done = fuzz.awaitEvent("fuzz_done", Duration.ofSeconds(120));
                assertEquals(Boolean.TRUE, done.get("alive"), done + "\n" + controller.process().output());
                assertEquals(0, fuzz.awaitExit(Duration.ofSeconds(10)), fuzz.output());
            }
            assertTrue(controller.process().isAlive(), controller.process().output());
            // what was there before the fuzz is still answered
            Map<String, Object> after = controller.http().lookup(prompt.tokens());
            assertEquals(2L * CHUNK, ControllerHttp.tokensOf(after, "sim-a"), after.toString());
            String metrics = controller.http().metrics();
            assertTrue(metrics.lines().anyMatch(l -> l.matches("lmcache4j_controller_\\w*(malformed|dropped)\\w*(\\{.*\\})? [1-9].*")),
                    "the malformed frames were counted:\n" + metrics);
        }
    }
}
