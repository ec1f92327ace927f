package lmcache4j.bench.trace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.zip.GZIPOutputStream;

import org.junit.jupiter.api.Test;

/** Reading Mooncake-format traces: the bundled one, gzip or plain, and every way a line can be wrong. */
class TraceFileTest {
    static Trace parse(String text) throws IOException {
        return TraceFile.read(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "test", 512);
    }

    private static String line(long ts, int input, String ids) {
        return "{\"timestamp\": " + ts + ", \"input_length\": " + input + ", \"output_length\": 7, \"hash_ids\": [" + ids + "]}\n";
    }

    @Test
    void theBundledTraceIsMooncakesConversationTrace() {
        Trace t = TraceFile.bundled();
        assertEquals(12_031, t.requests().size());
        assertEquals(288_500, t.requests().stream().mapToInt(r -> r.blockIds().length).sum()); // the folder's README
        assertEquals(182_790, t.blocks());
        assertEquals(276_491, t.fullBlockAccesses());
        assertEquals(170_899, t.distinctFullBlocks());
        assertEquals(3_537, Math.round(t.durationSeconds()));
    }

    @Test
    void idsAreRenumberedDenselyAndPartialBlocksAreKnown() throws IOException {
        Trace t = parse(line(0, 1100, "7, 900000000000, 5") + "\n" + line(10, 1024, "7, 900000000000"));
        assertEquals(2, t.requests().size());
        assertEquals(3, t.blocks());
        assertArrayEquals(new int[]{0, 1, 2}, t.requests().get(0).blockIds());
        assertArrayEquals(new int[]{0, 1}, t.requests().get(1).blockIds());
        assertEquals(2, t.requests().get(0).fullBlocks(512)); // 1100 tokens: two full blocks and a partial one
        assertEquals(2, t.requests().get(1).fullBlocks(512));
        assertEquals(3, t.requests().get(1).line()); // blank lines are skipped but counted
    }

    @Test
    void gzipIsReadByItsMagicBytes() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(bytes)) {
            gz.write(line(0, 512, "3").getBytes(StandardCharsets.UTF_8));
        }
        Trace t = TraceFile.read(new ByteArrayInputStream(bytes.toByteArray()), "gz", 512);
        assertEquals(1, t.requests().size());
    }

    @Test
    void malformedLinesAreErrorsNamingTheLineAndTheFix() {
        assertMalformed(line(0, 512, "1") + "{not json\n", "test line 2: not a JSON object");
        assertMalformed("[1, 2]\n", "test line 1: not a JSON object");
        assertMalformed("{\"input_length\": 512, \"output_length\": 1, \"hash_ids\": [1]}\n",
                "test line 1: \"timestamp\" must be a whole number from 0 to 9223372036854775807, was missing");
        assertMalformed(line(-5, 512, "1"), "test line 1: \"timestamp\" must be a whole number");
        assertMalformed(line(0, 1025, "1, 2"), "test line 1: \"hash_ids\" has 2 ids but input_length 1025 is 3 blocks of 512 "
                + "tokens (one id per block, the last may be partial; another block size: --block-tokens)");
        assertMalformed(line(0, 512, "-1"), "test line 1: \"hash_ids\"[0] must be a whole number >= 0, was -1");
        assertMalformed(line(0, 512, "\"a\""), "\"hash_ids\"[0] must be a whole number >= 0, was \"a\"");
        assertMalformed("{\"timestamp\": 0, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": 4}\n",
                "\"hash_ids\" must be an array of block ids, was a number");
        assertMalformed("\n\n", "test holds no requests");
    }

    private static void assertMalformed(String text, String message) {
        MalformedTraceException e = assertThrows(MalformedTraceException.class, () -> parse(text));
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }
}
