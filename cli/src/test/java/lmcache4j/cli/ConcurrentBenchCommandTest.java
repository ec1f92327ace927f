package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import lmcache4j.engine.connector.KvConnector;

/** {@code ./lmcache4j bench concurrent} runs every N, verifies what the retrieves loaded and reports; short windows, no timing assertions. */
class ConcurrentBenchCommandTest {
    private static String[] run(int expectedExit, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = ConcurrentBenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(expectedExit, exit, err.toString(StandardCharsets.UTF_8));
        return new String[] {out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void jsonHasOpsPerSecondForEveryNTheScalingAndTheLockTimes() {
        String json = run(0, "--json", "--threads", "1,2,3", "--millis", "150", "--warmup-millis", "20", "--copy-threads", "2")[0];
        assertTrue(json.matches("(?s)\\{\"threads\": \\[1, 2, 3], \"ops_per_s\": \\[[0-9.]+, [0-9.]+, [0-9.]+], "
                + "\"scaling_2_vs_1\": [0-9.]+, \"lock_hold_us_per_op\": \\[[0-9., ]+], \"lock_wait_us_per_op\": \\[[0-9., ]+], "
                + ".*\"mismatches\": 0, \"copy_threads\": 2, .*}\\s*"), json);
        // Every operation takes the CPU tier's lock: the metrics saw it, at every N.
        assertTrue(json.matches("(?s).*\"lock_acquisitions_per_op\": \\[[1-9][0-9.]*, [1-9][0-9.]*, [1-9][0-9.]*].*"), json);
        // The shared and own chunks are hit by the retrieves (3 of every 4 chunks requested; less only after an eviction).
        assertTrue(json.matches("(?s).*\"hit_rate\": \\[0\\.[1-7][0-9]*, 0\\.[1-7][0-9]*, 0\\.[1-7][0-9]*].*"), json);
        assertTrue(!json.contains("\"verified_bytes\": 0,"), json);
    }

    @Test
    void theStreamingStoresAreNamedAndCanBeTurnedOff() {
        String off = run(0, "--json", "--threads", "1", "--millis", "100", "--warmup-millis", "0", "--no-streaming-stores")[0];
        assertTrue(off.matches("(?s).*\"mismatches\": 0, .*\"copy_streaming_stores\": \"off \\(turned off\\)\", .*"), off);
        String table = run(0, "--threads", "1", "--millis", "100", "--warmup-millis", "0")[0];
        String mode;
        try (KvConnector host = KvConnector.host(1)) {
            mode = host.streamingStores(); // avx2 or sse2, or off with the reason
        }
        assertTrue(table.contains("streaming stores " + mode), table);
    }

    @Test
    void theTableHasOneRowPerN() {
        String table = run(0, "--threads", "1,2", "--millis", "100", "--warmup-millis", "0")[0];
        assertTrue(table.contains("scaling_2_vs_1") && table.contains("0 mismatching bytes")
                && table.matches("(?s).*\\n +1 +[0-9]+ +1\\.000 .*\\n +2 +[0-9]+ .*"), table);
    }

    @Test
    void badOptionsExitWith2() {
        assertTrue(run(2, "--threads", "1,0")[1].contains("--threads '0' must be an integer from 1 to 1024"));
        assertTrue(run(2, "--threads", "two")[1].contains("--threads 'two' must be an integer"));
        assertTrue(run(2, "--millis", "0")[1].contains("--millis '0' must be an integer from 1"));
        assertTrue(run(2, "--slow")[1].contains("unknown option '--slow'"));
        assertTrue(run(0, "--help")[0].startsWith("usage: ./lmcache4j bench concurrent"));
    }
}
