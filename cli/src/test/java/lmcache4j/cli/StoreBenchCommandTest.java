package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import lmcache4j.engine.connector.HostCopyRoutine;
import lmcache4j.engine.connector.KvConnector;

/** {@code ./lmcache4j bench store} runs, verifies what it retrieved and reports; two chunks, no timing assertions. */
class StoreBenchCommandTest {
    private static String[] run(int expectedExit, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = StoreBenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(expectedExit, exit, err.toString(StandardCharsets.UTF_8));
        return new String[] {out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void jsonHasTheAgreedKeysAndTheRetrievedKvIsRight() {
        String json = run(0, "--json", "--chunks", "2", "--runs", "1", "--warmup", "0")[0];
        assertTrue(json.matches("(?s)\\{\"store_gbps\": [0-9.]+, \"retrieve_gbps\": [0-9.]+, \"memcpy_gbps\": [0-9.]+, "
                + "\"store_vs_memcpy\": [0-9.]+, \"retrieve_vs_memcpy\": [0-9.]+, .*\"mismatches\": 0, \"chunks\": 2, "
                + "\"chunk_bytes\": 33554432, .*}\\s*"), json);
    }

    @Test
    void copyThreadsAreReportedWithTheRatiosAgainstOneContiguousCopy() {
        for (String threads : new String[] {"1", "3"}) {
            String json = run(0, "--json", "--chunks", "1", "--runs", "1", "--warmup", "0", "--copy-threads", threads)[0];
            assertTrue(json.matches("(?s).*\"chunk_memcpy_gbps\": [0-9.]+, \"store_vs_chunk_memcpy\": [0-9.]+, "
                    + "\"retrieve_vs_chunk_memcpy\": [0-9.]+, .*\"copy_threads\": " + threads + ", .*\"mismatches\": 0, .*"), json);
        }
        assertTrue(run(2, "--copy-threads", "0")[1].contains("--copy-threads '0' must be an integer from 1"));
    }

    @Test
    void theStreamingStoresAreNamedAndCanBeTurnedOff() {
        String on = run(0, "--json", "--chunks", "1", "--runs", "1", "--warmup", "0")[0];
        boolean streams = HostCopyRoutine.STREAMING_STORES.isAvailable();
        String expected;
        try (KvConnector host = KvConnector.host(1)) {
            expected = Pattern.quote(host.streamingStores()); // avx2 or sse2, or off with the reason
        }
        assertTrue(on.matches("(?s).*\"copy_streaming_stores\": \"" + expected + "\", .*\"mismatches\": 0, .*"), on);
        // 32 MiB chunks: every run is streamed when the machine streams at all (the engine's own counters say so).
        String fraction = streams ? "1\\.000" : "0\\.000";
        assertTrue(on.matches("(?s).*\"streamed_fraction\": " + fraction + ", .*"), on);
        String off = run(0, "--json", "--chunks", "1", "--runs", "1", "--warmup", "0", "--no-streaming-stores")[0];
        assertTrue(off.matches("(?s).*\"copy_streaming_stores\": \"off \\(turned off\\)\", .*\"mismatches\": 0, .*"), off);
        assertTrue(off.matches("(?s).*\"streamed_fraction\": 0\\.000, .*"), off);
    }

    @Test
    void theBestCopyIsReportedAndRoutinesAreComparedInOneProcess() {
        String one = run(0, "--json", "--chunks", "1", "--runs", "1", "--warmup", "0", "--copy-threads", "2")[0];
        assertTrue(one.matches("(?s).*\"best_copy_gbps\": [0-9.]+, \"best_copy_routine\": \"[a-z-]+\", "
                + "\"store_vs_best_copy\": [0-9.]+, \"retrieve_vs_best_copy\": [0-9.]+, \"best_copy_candidates_gbps\": "
                + "\\{[^}]*\"memcpy\": [0-9.]+, \"segment-copy\": [0-9.]+}, \"copy_threads\": 2, \"copy_routine\": \"streaming\", .*"), one);
        String both = run(0, "--json", "--chunks", "1", "--runs", "1", "--warmup", "0", "--copy-routine", "memcpy,segment-copy")[0];
        assertTrue(both.matches("(?s)\\{\"copy_routines\": \\[\\{\"store_gbps\": .*\"copy_routine\": \"memcpy\", "
                + "\"copy_streaming_stores\": \"memcpy\", .*\"mismatches\": 0, .*}, \\{\"store_gbps\": .*"
                + "\"copy_routine\": \"segment-copy\", \"copy_streaming_stores\": \"off \\(turned off\\)\", .*}]}\\s*"), both);
        // memcpy copies every run of a 32 MiB chunk itself (the engine's counters say so)
        assertTrue(both.matches("(?s).*\"copy_streaming_stores\": \"memcpy\", \"streamed_fraction\": 1\\.000, .*"), both);
        String table = run(0, "--chunks", "1", "--runs", "1", "--warmup", "0", "--copy-routine", "segment-copy,memcpy")[0];
        assertTrue(table.contains("copy routines compared") && table.contains("store_vs_best_copy"), table);
    }

    @Test
    void aRoutineThatDoesNotExistOrTwoWaysToNameOneAreUsageErrors() {
        assertTrue(run(2, "--copy-routine", "avx512")[1].contains("--copy-routine: no copy routine 'avx512'"));
        assertTrue(run(2, "--copy-routine", "memcpy", "--no-streaming-stores")[1].contains("exclude each other"));
    }

    @Test
    void theTableNamesTheLimitAndTheTarget() {
        String table = run(0, "--chunks", "1", "--runs", "1", "--warmup", "0")[0];
        assertTrue(table.contains("memcpy gather") && table.contains("target >= 0.85")
                && table.contains("0 mismatching bytes")
                && table.contains("store_vs_chunk_memcpy"), table);
    }

    @Test
    void badOptionsExitWith2() {
        assertTrue(run(2, "--chunks", "0")[1].contains("--chunks '0' must be an integer from 1"));
        assertTrue(run(2, "--fast")[1].contains("unknown option '--fast'"));
        assertTrue(run(0, "--help")[0].startsWith("usage: ./lmcache4j bench store"));
    }
}
