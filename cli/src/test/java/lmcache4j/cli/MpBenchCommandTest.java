package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * {@code ./lmcache4j bench mp} with two 32 MiB chunks and one run: it stores them through a real MP
 * server, retrieves and verifies them, reports the agreed keys with figures in sane ranges (ratios
 * of a bare baseline to the server at most about 1), names its rows, and refuses bad options; no
 * timing targets.
 */
class MpBenchCommandTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = MpBenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static double number(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\": ([0-9.]+)[,}]").matcher(json);
        assertTrue(m.find(), key + " missing from " + json);
        return Double.parseDouble(m.group(1));
    }

    @Test
    void jsonHasTheAgreedKeysAndEveryChunkComesBack() {
        Run r = run("--json", "--chunks", "2", "--lookups", "50", "--runs", "1", "--warmup", "0");
        assertEquals(0, r.exit(), r.err());
        String json = r.out().strip();
        assertTrue(json.startsWith("{\"lookup_p50_us\": ") && json.endsWith("}"), json);
        for (String key : new String[] {"lookup_p50_us", "raw_rtt_p50_us", "store_ops_per_s", "retrieve_ops_per_s",
                "store_control_ops_per_s", "retrieve_control_ops_per_s", "pool_write_gbps", "pool_read_gbps", "memcpy_gbps",
                "pool_write_vs_memcpy", "pool_read_vs_memcpy", "lookup_vs_raw_rtt", "l2_load_gbps", "l2_raw_read_gbps",
                "l2_load_vs_raw_read"}) {
            assertTrue(number(json, key) > 0, key + " in " + json);
        }
        assertTrue(number(json, "lookup_p99_us") >= number(json, "lookup_p50_us"), json);
        assertTrue(number(json, "raw_rtt_p99_us") >= number(json, "raw_rtt_p50_us"), json);
        assertEquals(number(json, "raw_rtt_p50_us") / number(json, "lookup_p50_us"), number(json, "lookup_vs_raw_rtt"), 0.01,
                json);
        assertEquals(number(json, "pool_write_gbps") / number(json, "memcpy_gbps"), number(json, "pool_write_vs_memcpy"),
                0.01, json);
        assertEquals(number(json, "l2_load_gbps") / number(json, "l2_raw_read_gbps"), number(json, "l2_load_vs_raw_read"),
                0.01, json);
        assertTrue(json.contains("\"chunks\": 2,") && json.contains("\"chunk_bytes\": 33554432,")
                && json.contains("\"lookups\": 50,") && json.contains("\"verified_chunks\": 4,")
                && json.contains("\"mismatching_chunks\": 0,"), json);
    }

    @Test
    void theTableNamesItsRows() {
        Run r = run("--chunks", "1", "--lookups", "20", "--runs", "1", "--warmup", "0");
        assertEquals(0, r.exit(), r.err());
        for (String row : new String[] {"lookup round trip (MP server)", "bare ZeroMQ round trip", "store (prepare",
                "retrieve (prepare", "store control path", "retrieve control path", "pool write", "pool read", "memcpy",
                "L2: load from the disk tier", "L2: plain read", "0 differ"}) {
            assertTrue(r.out().contains(row), row + " missing from " + r.out());
        }
    }

    @Test
    void badOptionsAreUsageErrors() {
        Run r = run("--chunks", "0");
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("--chunks"), r.err());
        assertEquals(2, run("--lookups", "many").exit());
        assertEquals(2, run("--runs", "0").exit());
        assertEquals(2, run("--pool", "1").exit());
    }
}
