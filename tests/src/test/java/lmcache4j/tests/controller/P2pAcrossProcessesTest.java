package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.foreign.Arena;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.p2p.P2pBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Engines in separate JVMs on loopback with a real controller ({@code ./lmcache4j controller} in a
 * process of its own): engine A (a child JVM) stores a prompt and reports it; engine B (this JVM)
 * misses locally, asks the controller, and reads A's memory over A's transfer server. B's close
 * checks its allocator for leaks.
 */
class P2pAcrossProcessesTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    @Test
    void aPromptStoredInAIsServedToBFromAsMemoryByteForByte() throws Exception {
        P2pEngineSetup setup = new P2pEngineSetup(2, 2, 16, 64, 4);
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        int[] p2p = FreePorts.take(2);
        long seed = 1401;
        try (ControllerProcess controller = ControllerProcess.start("controller", ports, setup.chunkSize(),
                Duration.ofSeconds(30), tmp);
             ChildProcess a = startA(setup, ports, p2p[0], seed);
             Arena arena = Arena.ofShared();
             LMCacheEngine b = setup.engine(setup.config("B", ports.pull(), ports.reply(), p2p[1], 5_000))) {
            a.awaitEvent("stored", WAIT);
            int[] tokens = setup.tokens(seed);
            long[] slots = setup.slots();
            awaitPeerHolds(b, tokens, setup.tokenCount());

            PagedKvCache target = setup.cache(arena);
            boolean[] loaded = b.retrieve(tokens, null, target, slots, Map.of(), null);
            assertTrue(loaded[0] && loaded[loaded.length - 1], "every token came from A");
            PagedKvCache expected = setup.cache(arena);
            setup.fill(expected, tokens, slots);
            for (int l = 0; l < setup.layers(); l++) {
                assertEquals(-1, expected.layers().get(l).mismatch(target.layers().get(l)), "layer " + l + ", byte for byte");
            }
            P2pBackend.Stats stats = p2pTier(b).stats();
            assertEquals(setup.chunks(), stats.hits(), "each chunk fetched from A once, CRC32C-checked");
            assertEquals(0, stats.rejected());
        }
    }

    @Test
    void aKilledDuringTheTransferIsAMissWithinTheDeadlineAndBLeaksNothing() throws Exception {
        // 48 chunks of 8 MiB: long enough a transfer to kill A in the middle of it.
        P2pEngineSetup setup = new P2pEngineSetup(8, 8, 128, 256, 48);
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        int[] p2p = FreePorts.take(2);
        long seed = 1402;
        int deadlineMs = 2_000;
        try (ControllerProcess controller = ControllerProcess.start("controller", ports, setup.chunkSize(),
                Duration.ofSeconds(30), tmp);
             ChildProcess a = startA(setup, ports, p2p[0], seed);
             LMCacheEngine b = setup.engine(setup.config("B", ports.pull(), ports.reply(), p2p[1], deadlineMs))) {
            a.awaitEvent("stored", WAIT);
            int[] tokens = setup.tokens(seed);
            awaitPeerHolds(b, tokens, setup.tokenCount());

            List<ChunkRange> chunks = b.prepare(tokens, Map.of()).chunks();
            CompletableFuture<Integer> fetched = CompletableFuture.supplyAsync(() -> {
                int n = 0;
                for (ChunkRange chunk : chunks) { // the retrieve's order: one chunk after another, stop at a miss
                    Optional<MemoryObj> obj = b.storage().get(chunk.key());
                    if (obj.isEmpty()) {
                        break;
                    }
                    obj.get().release();
                    n++;
                }
                return n;
            });
            P2pBackend tier = p2pTier(b);
            long until = System.nanoTime() + WAIT.toNanos();
            while (tier.stats().hits() < 2 && !fetched.isDone() && System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            a.kill9();
            long killedAt = System.nanoTime();
            int got = fetched.get(deadlineMs + 10_000L, java.util.concurrent.TimeUnit.MILLISECONDS);
            long afterKillMs = (System.nanoTime() - killedAt) / 1_000_000;
            assertTrue(got >= 2 && got < chunks.size(), "a prefix before the kill, a miss after it: " + got + " of "
                    + chunks.size());
            assertTrue(afterKillMs < deadlineMs + 1_000, "B stopped " + afterKillMs + " ms after the kill (deadline "
                    + deadlineMs + " ms)");
        } // B's close: every object released, or its allocator's close fails the test
    }

    private static P2pBackend p2pTier(LMCacheEngine b) {
        return (P2pBackend) b.storage().tier(P2pBackend.NAME).orElseThrow();
    }

    /** Until the controller has A's admits for the whole prompt, B's lookup (through the controller) finds less. */
    private static void awaitPeerHolds(LMCacheEngine b, int[] tokens, int all) throws InterruptedException {
        long until = System.nanoTime() + WAIT.toNanos();
        int found = 0;
        while (System.nanoTime() < until && (found = b.lookup(tokens, Map.of(), null)) < all) {
            Thread.sleep(50);
        }
        assertEquals(all, found, "B's lookup through the controller finds A's whole prompt");
    }

    private ChildProcess startA(P2pEngineSetup s, ControllerProcess.Ports ports, int p2pPort, long seed) throws Exception {
        return ChildProcess.start("engine-A", childJvm(P2pEngineMain.class.getName(), "A", Integer.toString(ports.pull()),
                Integer.toString(ports.reply()), Integer.toString(p2pPort), Integer.toString(s.layers()),
                Integer.toString(s.kvHeads()), Integer.toString(s.headSize()), Integer.toString(s.chunkSize()),
                Integer.toString(s.chunks()), Long.toString(seed)), tmp, Map.of());
    }

    /** A child JVM running {@code main} from these test classes, on this JVM's module path (or class path). */
    private static List<String> childJvm(String main, String... args) throws URISyntaxException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path testClasses = Path.of(P2pEngineMain.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m"));
        String modulePath = System.getProperty("jdk.module.path");
        if (modulePath != null && !modulePath.isEmpty()) {
            cmd.addAll(List.of("--enable-native-access=lmcache4j.cuda", "--illegal-native-access=deny",
                    "-p", modulePath, "--patch-module", "lmcache4j.tests=" + testClasses, "-m", "lmcache4j.tests/" + main));
        } else {
            cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED",
                    "-cp", testClasses + File.pathSeparator + System.getProperty("java.class.path"), main));
        }
        cmd.addAll(List.of(args));
        return cmd;
    }
}
