package lmcache4j.tests.controller;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import lmcache4j.tests.TestPython;

/**
 * tests/python/lmcache_worker_sim.py in a process of its own: an LMCache-format worker (LMCache's
 * exact message encodings over pyzmq) that registers with a controller, heartbeats, pushes the
 * chunks it is told to hold, runs a full sync when asked and answers control messages.
 */
final class WorkerSimulator implements AutoCloseable {
    static final String CPU = "LocalCPUBackend";
    static final String DISK = "LocalDiskBackend";
    static final Duration WAIT = Duration.ofSeconds(30);

    private final ChildProcess process;

    private WorkerSimulator(ChildProcess process) {
        this.process = process;
    }

    /**
     * Starts a simulator for {@code instance} against a controller's ROUTER ({@code replyPort}) and
     * PULL ({@code pullPort}) on loopback; {@code extra} are more options of the script.
     */
    static WorkerSimulator start(String instance, int replyPort, int pullPort, Path logDir, String... extra)
            throws IOException {
        TestPython.require();
        List<String> args = new ArrayList<>(List.of("--reply", "tcp://127.0.0.1:" + replyPort,
                "--pull", "tcp://127.0.0.1:" + pullPort, "--instance", instance));
        args.addAll(List.of(extra));
        return new WorkerSimulator(ChildProcess.start("sim-" + instance,
                TestPython.script("lmcache_worker_sim.py", args), logDir, Map.of()));
    }

    /** Waits until the controller answered its RegisterMsg; the "registered" event. */
    Map<String, Object> awaitRegistered() throws InterruptedException {
        return process.awaitEvent("registered", WAIT);
    }

    /** Holds {@code prompt}'s chunks at {@code location} and pushes their admits; waits for the push. */
    void admit(PromptChunks prompt, String location) throws IOException, InterruptedException {
        int before = count("pushed");
        process.send(prompt.admitCommand(location));
        process.awaitEvent("pushed", before + 1, e -> true, WAIT);
    }

    /**
     * Holds {@code tokens}' full chunks at {@code location}, keyed by the simulator itself as LMCache's
     * token database keys them (Python and cbor2, not lmcache4j), and pushes their admits.
     */
    void admitKeyedByLmcache(int[] tokens, String location) throws IOException, InterruptedException {
        int before = count("pushed");
        process.send("{\"op\":\"admit\",\"location\":\"" + location + "\",\"tokens\":"
                + Arrays.toString(tokens).replace(" ", "") + "}");
        process.awaitEvent("pushed", before + 1, e -> true, WAIT);
    }

    /** Drops {@code prompt}'s chunks from {@code fromChunk} on and pushes their evicts; waits for the push. */
    void evict(PromptChunks prompt, String location, int fromChunk) throws IOException, InterruptedException {
        int before = count("pushed");
        process.send(prompt.evictCommand(location, fromChunk));
        process.awaitEvent("pushed", before + 1, e -> true, WAIT);
    }

    ChildProcess process() {
        return process;
    }

    private int count(String event) {
        return (int) process.events().stream().filter(e -> event.equals(e.get("event"))).count();
    }

    /** Sends quit (the simulator deregisters) and waits for it to exit. */
    int quit() throws IOException, InterruptedException {
        process.send("{\"op\":\"quit\"}");
        return process.awaitExit(WAIT);
    }

    @Override
    public void close() throws InterruptedException {
        process.close();
    }
}
