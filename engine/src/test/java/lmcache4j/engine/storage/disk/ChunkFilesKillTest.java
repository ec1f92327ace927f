package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.TestChunks;

/**
 * A writer JVM killed with SIGKILL in the middle of writing: the directory reopens with every chunk
 * whose write had returned, byte for byte, and nothing partial. Three rounds on the same directory,
 * each killed after a different number of writes (up to six while no kill has yet landed inside a write).
 */
class ChunkFilesKillTest {
    private static final int[] KILL_AFTER = {12, 25, 7, 3, 9, 5};

    @TempDir
    Path dir;

    @Test
    void a_sigkilled_writer_leaves_every_completed_chunk_and_no_partial_one() throws Exception {
        Map<CacheKey, Integer> completed = new HashMap<>();
        int partialSeen = 0;
        // at least 3 rounds; up to 6 while no kill has landed inside a write (timing decides, so it is not asserted)
        for (int round = 0; round < KILL_AFTER.length && (round < 3 || partialSeen == 0); round++) {
            int first = round * 1000;
            int last = runAndKill(first, KILL_AFTER[round]);
            for (int i = first; i <= last; i++) {
                completed.put(TestChunks.key(i), i);
            }
            List<Path> temps;
            try (Stream<Path> s = Files.list(dir)) {
                temps = s.filter(p -> ChunkFileNames.isTemp(p.getFileName().toString())).toList();
            }
            partialSeen += temps.size();

            ChunkFiles files = new ChunkFiles(dir, true, false);
            RecoveryReport r = files.recover();
            assertEquals(temps.size(), r.removedPartial(), "round " + round + ": temp files " + temps);
            assertEquals(0, r.removedCorrupt());
            assertEquals(0, r.foreign());
            try (Stream<Path> s = Files.list(dir)) {
                assertEquals(List.of(), s.filter(p -> ChunkFileNames.isTemp(p.getFileName().toString())).toList());
            }
            // every reported write survived; at most one more (renamed, but killed before it printed)
            Map<CacheKey, RecoveredChunk> found = new HashMap<>();
            r.chunks().forEach(c -> found.put(c.key(), c));
            assertTrue(found.keySet().containsAll(completed.keySet()), "missing completed chunks after round " + round);
            assertTrue(found.size() <= completed.size() + 1, found.size() + " chunks, " + completed.size() + " completed");
            verifyPayloads(files, r.chunks());
            System.out.println("round " + round + ": killed after write " + last + ", " + temps.size()
                    + " partial file(s) removed, " + found.size() + " chunks recovered intact");
        }
        System.out.println("partial files seen across rounds: " + partialSeen);
    }

    private static void verifyPayloads(ChunkFiles files, List<RecoveredChunk> chunks) throws Exception {
        try (TensorMemoryAllocator alloc = DiskTestChunks.allocator(16L << 20)) {
            MemoryObj dst = DiskTestChunks.allocate(alloc, DiskTestChunks.BIG_ODD, DType.BFLOAT16, MemoryFormat.KV_2LTD);
            try {
                for (RecoveredChunk c : chunks) {
                    files.readPayload(c.path(), c.header(), dst);
                    long index = Long.parseLong(indexOf(c));
                    assertEquals(index, dst.segment().get(DiskTestChunks.LE_LONG, 0), c.path().toString());
                    assertEquals(-1, DiskTestChunks.mismatch(dst.segment(), 8, dst.byteSize(), 0), c.path().toString());
                }
            } finally {
                dst.release();
            }
        }
    }

    /** Chunk i holds i in its first 8 bytes: find i by matching the key among the ones the writer uses. */
    private static String indexOf(RecoveredChunk c) {
        for (int round = 0; round < KILL_AFTER.length; round++) {
            for (int i = round * 1000; i < round * 1000 + 1000; i++) {
                if (TestChunks.key(i).equals(c.key())) {
                    return Integer.toString(i);
                }
            }
        }
        throw new AssertionError("unexpected key " + c.key());
    }

    /**
     * Starts a writer at index {@code first}, kills it once it has reported {@code killAfter} writes;
     * returns the last index it reported before it died.
     */
    private int runAndKill(int first, int killAfter) throws Exception {
        Process p = new ProcessBuilder(command(dir.toString(), Integer.toString(first), "60"))
                .redirectErrorStream(true).start();
        List<String> output = new ArrayList<>();
        int last = first - 1;
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            int wrote = 0;
            while (wrote < killAfter && (line = out.readLine()) != null) {
                output.add(line);
                if (line.startsWith("wrote ")) {
                    last = Integer.parseInt(line.split(" ")[1]);
                    wrote++;
                }
            }
            assertEquals(killAfter, wrote, "the writer stopped early:\n" + String.join("\n", output));
            // The child is now at the start of its next write (computing the CRC). A write takes a few
            // milliseconds here; wait part of one so the kill tends to land with the temp file open.
            LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(500_000, 4_000_000));
            // SIGKILL: no shutdown hooks, no finally blocks. Through the handle, which leaves the
            // child's output readable (Process.destroyForcibly closes it).
            p.toHandle().destroyForcibly();
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the writer did not die");
            // Writes the child reported before the kill landed but this test had not read yet (it may
            // have run ahead while this thread waited) completed too: read them out of the pipe.
            while ((line = out.readLine()) != null) {
                output.add(line);
                if (line.startsWith("wrote ")) {
                    last = Integer.parseInt(line.split(" ")[1]);
                }
            }
        } finally {
            p.destroyForcibly();
        }
        assertEquals(137, p.exitValue(), "killed by SIGKILL");
        assertNotNull(output.getFirst());
        return last;
    }

    /** The child's command line: the test's own module path (or class path), with the test classes patched in. */
    private static List<String> command(String... args) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String main = ChunkWriterMain.class.getName();
        URI self = ChunkWriterMain.class.getResource(ChunkWriterMain.class.getSimpleName() + ".class").toURI();
        Path testClasses = Path.of(self);
        for (int i = 0; i < main.split("\\.").length; i++) {
            testClasses = testClasses.getParent();
        }
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m"));
        String modulePath = System.getProperty("jdk.module.path");
        if (modulePath != null && !modulePath.isEmpty()) {
            cmd.addAll(List.of("--enable-native-access=lmcache4j.cuda", "--illegal-native-access=deny",
                    "-p", modulePath, "--patch-module", "lmcache4j.engine=" + testClasses,
                    "-m", "lmcache4j.engine/" + main));
        } else {
            cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED",
                    "-cp", testClasses + File.pathSeparator + System.getProperty("java.class.path"), main));
        }
        cmd.addAll(List.of(args));
        return cmd;
    }
}
