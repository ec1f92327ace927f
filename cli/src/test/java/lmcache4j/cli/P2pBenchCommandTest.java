package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/**
 * {@code ./lmcache4j bench p2p} with two 32 MiB chunks and one run: it fetches them from the peer
 * engine through the P2P tier, verifies them against the peer's, reports the agreed keys, and refuses
 * bad options; no timing assertions.
 */
class P2pBenchCommandTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = P2pBenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void jsonHasTheAgreedKeysAndEveryChunkMatchesThePeers() {
        Run r = run("--json", "--chunks", "2", "--runs", "1", "--warmup", "0");
        assertEquals(0, r.exit(), r.err());
        String json = r.out().strip();
        assertTrue(json.matches("(?s)\\{\"p2p_get_gbps\": [0-9.]+, \"ceiling_get_gbps\": [0-9.]+, \"p2p_vs_ceiling\": [0-9.]+, "
                + "\"untagged_get_gbps\": [0-9.]+, \"tagged_vs_untagged\": [0-9.]+, \"tag_gbps\": [0-9.]+, \"payload_tag\": \"(poly1305|aes-gcm)\", "
                + "\"target_ratio\": 0.80, .*}"), json);
        assertTrue(json.contains("\"chunks\": 2") && json.contains("\"chunk_bytes\": 33554432")
                && json.contains("\"verified_chunks\": 2") && json.contains("\"mismatching_chunks\": 0")
                && json.contains("\"rejected_chunks\": 0"), json);
    }

    @Test
    void theTableNamesTierAndCeiling() {
        Run r = run("--chunks", "1", "--runs", "1", "--warmup", "0", "--connections", "2");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("P2P tier") && r.out().contains("LmConnector alone") && r.out().contains("0 differ"), r.out());
    }

    @Test
    void badOptionsAreUsageErrors() {
        Run r = run("--chunks", "0");
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("--chunks"), r.err());
        assertEquals(2, run("--connections", "many").exit());
    }
}
