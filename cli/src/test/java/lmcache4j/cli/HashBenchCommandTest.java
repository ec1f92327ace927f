package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** {@code ./lmcache4j bench hash} runs and reports; a tiny configuration, no timing assertions. */
class HashBenchCommandTest {
    private static String[] run(int expectedExit, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = HashBenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(expectedExit, exit, err.toString(StandardCharsets.UTF_8));
        return new String[] {out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void jsonHasTheAgreedKeys() {
        String json = run(0, "--json", "--tokens", "1000", "--runs", "1", "--warmup", "0", "--min-run-ms", "0")[0];
        assertTrue(json.matches("(?s)\\{\"hash_tokens_per_s\": \\d+, \"hash_vs_raw_sha256\": \\d+\\.\\d{3}, .*\"tokens\": 1000, "
                + "\"chunk_size\": 256, \"chunks\": 4, .*}\\s*"), json);
    }

    @Test
    void theTableSaysWhetherTheTargetIsMet() {
        String table = run(0, "--tokens", "600", "--chunk-size", "100", "--runs", "1", "--warmup", "0", "--min-run-ms", "0")[0];
        assertTrue(table.contains("600 tokens, 6 chunks of 100") && table.contains("ratio") && table.contains("target >= 0.8"), table);
    }

    @Test
    void badOptionsExitWith2() {
        assertTrue(run(2, "--tokens", "0")[1].contains("--tokens '0' must be an integer of at least 1"));
        assertTrue(run(2, "--fast")[1].contains("unknown option '--fast'"));
        assertTrue(run(0, "--help")[0].startsWith("usage: ./lmcache4j bench hash"));
    }
}
