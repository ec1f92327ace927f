package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** {@code ./lmcache4j bench redis} on a tiny shape (1 chunk of 4 tokens, 1 run): the keys exist, bad args exit 2. */
class RedisBenchCommandTest {
    private static String[] run(int expectedExit, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = RedisBenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(expectedExit, exit, err.toString(StandardCharsets.UTF_8));
        return new String[] {out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void jsonHasTheAgreedKeys() {
        String json = run(0, "--json", "--chunks", "1", "--runs", "1", "--warmup", "0", "--tokens", "4",
                "--cluster-masters", "1", "--split-part-mb", "1", "--split-connections", "2")[0];
        for (String key : new String[] {"remote_put_gbps", "remote_get_gbps", "raw_set_gbps", "raw_get_gbps", "put_vs_raw",
                "get_vs_raw", "redis_benchmark_set_gbps", "redis_benchmark_get_gbps", "lm_put_gbps", "lm_get_gbps",
                "lm_ceiling_put_gbps", "lm_ceiling_get_gbps", "lm_put_vs_ceiling", "lm_get_vs_ceiling", "split_put_gbps",
                "split_get_gbps", "split_vs_single", "cluster_split_get_gbps", "cluster_single_get_gbps"}) {
            assertTrue(json.contains("\"" + key + "\": "), key + " missing: " + json);
        }
        assertTrue(json.contains("\"split_part_bytes\": 1048576") && json.contains("\"split_connections\": 2")
                && json.contains("\"cluster_masters\": \"1\""), json);
        assertTrue(json.contains("\"mismatches\": 0") && json.contains("\"chunk_bytes\": 524288"), json);
    }

    @Test
    void badOptionsExitWith2() {
        assertTrue(run(2, "--chunks", "0")[1].contains("--chunks '0' must be an integer from 1"));
        assertTrue(run(2, "--fast")[1].contains("unknown option '--fast'"));
        assertTrue(run(2, "--split-part-mb", "9")[1].contains("--split-part-mb '9' must be an integer from 1"));
        assertTrue(run(2, "--cluster-masters", "3,0")[1].contains("--cluster-masters '0' must be an integer from 1"));
        assertTrue(run(0, "--help")[0].startsWith("usage: ./lmcache4j bench redis"));
    }
}
