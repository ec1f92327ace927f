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
 * {@code ./lmcache4j bench zmq}, scaled down to seconds: both libraries measured (libzmq is a
 * prerequisite of the test suite, Debian's libzmq5), every agreed key present with a figure in a
 * sane range, the table's rows named, and bad options refused; no timing targets.
 */
class ZmqBenchCommandTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = ZmqBenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static double number(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\": ([0-9.]+)[,}]").matcher(json);
        assertTrue(m.find(), key + " missing from " + json);
        return Double.parseDouble(m.group(1));
    }

    @Test
    void jsonMeasuresBothLibraries() {
        Run r = run("--json", "--connects", "20", "--runs", "1", "--scale", "0.02");
        assertEquals(0, r.exit(), r.err());
        String json = r.out().strip();
        for (String key : new String[] {"lookup_p50_us_jeromq", "lookup_p50_us_libzmq", "router_msgs_per_s_jeromq",
                "router_msgs_per_s_libzmq", "curve_admits_per_s_jeromq", "curve_admits_per_s_libzmq",
                "plain_admits_per_s_jeromq", "plain_admits_per_s_libzmq", "late_first_event_p50_ms_jeromq",
                "late_first_event_p50_ms_libzmq", "late_received_per_s_jeromq", "late_received_per_s_libzmq",
                "jeromq_connect_median_ms", "libzmq_connect_median_ms"}) {
            assertTrue(number(json, key) > 0, key + " in " + json);
        }
        assertTrue(number(json, "lookup_p99_us_jeromq") >= number(json, "lookup_p50_us_jeromq"), json);
        assertEquals(number(json, "curve_admits_per_s_jeromq") / number(json, "plain_admits_per_s_jeromq"),
                number(json, "curve_vs_plain_jeromq"), 0.01, json);
        assertEquals(0, number(json, "jeromq_stalls_per_1000"), "lmcache4j's contexts stalled a connect: " + json);
        assertTrue(json.contains("\"connects\": 20,") && json.contains("\"runs\": 1,")
                && json.contains("\"libzmq\": \"libzmq 4."), json);
    }

    @Test
    void theTableNamesItsRowsAndBadOptionsAreUsageErrors() {
        Run r = run("--connects", "5", "--runs", "1", "--scale", "0.01");
        assertEquals(0, r.exit(), r.err());
        for (String row : new String[] {"connects stalled", "stalls per 1,000 connects", "lookup round trip p50",
                "ROUTER messages/s", "admits/s through a CURVE PULL", "late subscriber: first event"}) {
            assertTrue(r.out().contains(row), row + " missing from " + r.out());
        }
        assertEquals(2, run("--connects", "0").exit());
        assertEquals(2, run("--runs", "many").exit());
        Run scale = run("--scale", "0");
        assertEquals(2, scale.exit());
        assertTrue(scale.err().contains("--scale"), scale.err());
    }
}
