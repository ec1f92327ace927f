package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./lmcache4j bench disk} with one 32 MiB chunk in a temporary directory: it verifies what the
 * tier read back, reports it, cleans up after itself, and refuses bad options; no timing assertions.
 */
class DiskBenchCommandTest {
    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = DiskBenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private String[] oneChunk(String... more) {
        String[] base = {"--chunks", "1", "--runs", "1", "--warmup", "0", "--threads", "1", "--dir", dir.toString()};
        String[] args = java.util.Arrays.copyOf(base, base.length + more.length);
        System.arraycopy(more, 0, args, base.length, more.length);
        return args;
    }

    @Test
    void jsonHasTheAgreedKeysAndNoChunkReadBackDiffers() throws Exception {
        Run r = run(oneChunk("--json"));
        assertEquals(0, r.exit(), r.err());
        String json = r.out().strip();
        assertTrue(json.matches("(?s)\\{\"disk_write_gbps\": [0-9.]+, \"disk_read_gbps\": [0-9.]+, \"raw_write_gbps\": [0-9.]+, "
                + "\"raw_read_gbps\": [0-9.]+, \"write_vs_raw\": [0-9.]+, \"read_vs_raw\": [0-9.]+, .*}"), json);
        assertTrue(json.contains("\"chunks\": 1") && json.contains("\"chunk_bytes\": 33554432")
                && json.contains("\"threads\": 1") && json.contains("\"mismatching_chunks\": 0"), json);
        assertTrue(json.matches("(?s).*\"direct_io\": (true|false).*"), json);
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(0, left.count(), "the benchmark deletes its files and directory");
        }
    }

    @Test
    void theTableComparesTheTierWithRawIo() {
        Run r = run(oneChunk());
        assertEquals(0, r.exit(), r.err());
        String table = r.out();
        assertTrue(table.startsWith("disk bench: 1 chunks x 32 MiB"), table);
        assertTrue(table.contains("raw FileChannel") && table.contains("ChunkFiles (file layer)")
                && table.contains("LocalDiskBackend (the tier)") && table.contains("(target >= 0.80)"), table);
        assertTrue(table.contains("verified   1 chunks read back from the tier: 0 differ"), table);
    }

    @Test
    void badOptionsExitWith2AndHelpWith0() {
        Run unknown = run("--fast");
        assertEquals(2, unknown.exit());
        assertTrue(unknown.err().contains("unknown option '--fast'") && unknown.err().contains("./lmcache4j bench disk --help") && unknown.err().strip().lines().count() == 1,
                unknown.err());
        assertEquals(2, run("--chunks", "0").exit());
        assertEquals(2, run("--threads", "x").exit());
        assertEquals(2, run("--dir").exit());
        Run help = run("--help");
        assertEquals(0, help.exit());
        assertTrue(help.out().startsWith("usage: ./lmcache4j bench disk"), help.out());
    }
}
