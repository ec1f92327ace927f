package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.junit.jupiter.api.Test;

import lmcache4j.engine.json.Json;

/** {@code ./lmcache4j bench controller} runs and reports; a tiny configuration, no timing assertions. */
class ControllerBenchCommandTest {
    private static String[] run(int expectedExit, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = ControllerBenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(expectedExit, exit, err.toString(StandardCharsets.UTF_8));
        return new String[] {out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    private static final String[] TINY = {"--ops", "20000", "--runs", "1", "--entries", "100000", "--lookup-chunks", "10000",
            "--prompt-tokens", "2048", "--lookups", "50", "--http-lookups", "10"};

    @Test
    void jsonHasTheAgreedKeysAndTheLookupFindsThePrompt() {
        String[] args = new String[TINY.length + 1];
        args[0] = "--json";
        System.arraycopy(TINY, 0, args, 1, TINY.length);
        Map<String, Object> json = Json.parseObject(run(0, args)[0]);
        for (String key : new String[]{"admit_msgs_per_s", "raw_pull_msgs_per_s", "ingest_vs_raw", "bytes_per_entry",
                "lookup_p50_us", "lookup_p99_us", "http_lookup_p50_us", "http_lookup_p99_us"}) {
            assertTrue(json.get(key) instanceof Number n && n.doubleValue() > 0, key + " in " + json);
        }
        assertEquals(100_000L, json.get("memory_entries"));
        assertEquals(8L, json.get("lookup_prompt_chunks"));
        assertEquals(20_000L, json.get("ingest_ops"));
        double bytes = ((Number) json.get("bytes_per_entry")).doubleValue();
        assertTrue(bytes > 12 && bytes < 200, "bytes per entry " + bytes); // at least a forward slot; never absurd
    }

    @Test
    void theTableSaysWhetherTheTargetsAreMet() {
        String table = run(0, TINY)[0];
        assertTrue(table.contains("target >= 0.5") && table.contains("target <= 64") && table.contains("over HTTP"), table);
    }

    @Test
    void badOptionsExitWith2() {
        assertTrue(run(2, "--ops", "0")[1].contains("--ops must be between 1"));
        assertTrue(run(2, "--prompt-tokens", "10")[1].contains("--prompt-tokens"));
        assertTrue(run(2, "--fast")[1].contains("unknown option '--fast'"));
        assertTrue(run(0, "--help")[0].startsWith("usage: ./lmcache4j bench controller"));
    }
}
