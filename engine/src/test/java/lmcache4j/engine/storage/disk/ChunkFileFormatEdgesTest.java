package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;
import org.junit.jupiter.api.Test;

/**
 * The chunk file format and file names at their limits: the highest rank and longest key a
 * header holds and one past them, the rank field forged just outside its range, the characters on
 * each side of the safe ranges, multi-byte and long keys, and temp names one character off.
 */
class ChunkFileFormatEdgesTest {
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static TensorShape ones(int rank) {
        int[] dims = new int[rank];
        java.util.Arrays.fill(dims, 1);
        return TensorShape.of(dims);
    }

    @Test
    void aHeaderHoldsRankSixteenAndTheLongestKeyButNotOneMore() {
        assertEquals(4096 - 48 - 4, ChunkFileFormat.maxKeyBytes(1), "4,096 bytes less the 48 fixed and one dim");
        assertEquals(4096 - 48 - 64, ChunkFileFormat.maxKeyBytes(16));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(ChunkFileHeader.BYTES);
            byte[] longest = "k".repeat(ChunkFileFormat.maxKeyBytes(16)).getBytes(StandardCharsets.UTF_8);
            ChunkFileFormat.encode(buf, longest, MemoryFormat.KV_2LTD, DType.BFLOAT16, ones(16), 2, 0);
            ChunkFileFormat.Parsed parsed = ChunkFileFormat.decode(buf, ChunkFileHeader.BYTES);
            assertEquals(16, parsed.header().shape().rank());
            assertEquals(longest.length, parsed.header().keyString().length());
            IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class, () -> ChunkFileFormat.encode(buf,
                    new byte[longest.length + 1], MemoryFormat.KV_2LTD, DType.BFLOAT16, ones(16), 2, 0));
            assertTrue(tooLong.getMessage().contains("(1.." + longest.length + " bytes for rank 16)"), tooLong.getMessage());
            assertThrows(IllegalArgumentException.class, () -> ChunkFileFormat.encode(buf, new byte[0],
                    MemoryFormat.KV_2LTD, DType.BFLOAT16, ones(1), 2, 0));
            IllegalArgumentException rank = assertThrows(IllegalArgumentException.class, () -> ChunkFileFormat.encode(buf,
                    "k".getBytes(StandardCharsets.UTF_8), MemoryFormat.KV_2LTD, DType.BFLOAT16, ones(17), 2, 0));
            assertTrue(rank.getMessage().contains("has rank 17; chunk files hold at most 16"), rank.getMessage());
        }
    }

    @Test
    void aRankFieldJustOutsideItsRangeAndAShortHeaderAreCorrupt() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(ChunkFileHeader.BYTES);
            for (int forged : new int[] {0, 17}) {
                ChunkFileFormat.encode(buf, "k".getBytes(StandardCharsets.UTF_8), MemoryFormat.KV_2LTD, DType.BFLOAT16,
                        ones(4), 2, 0);
                buf.set(LE_INT, 24, forged);
                ChunkFileFormat.Parsed parsed = ChunkFileFormat.decode(buf, ChunkFileHeader.BYTES);
                assertEquals(ChunkFileFormat.Verdict.CORRUPT, parsed.verdict());
                assertEquals("rank " + forged + " outside 1..16", parsed.reason());
            }
            ChunkFileFormat.encode(buf, "k".getBytes(StandardCharsets.UTF_8), MemoryFormat.KV_2LTD, DType.BFLOAT16,
                    TensorShape.of(2, 1, 1, 1), 4, 0);
            assertEquals(ChunkFileFormat.Verdict.VALID, ChunkFileFormat.decode(buf, ChunkFileHeader.BYTES).verdict(),
                    "exactly a header's bytes are enough");
            assertEquals("header truncated: 4095 of 4096 bytes",
                    ChunkFileFormat.decode(buf, ChunkFileHeader.BYTES - 1).reason());
            assertEquals(ChunkFileFormat.Verdict.FOREIGN, ChunkFileFormat.decode(buf, 7).verdict(), "not even the magic");
        }
    }

    @Test
    void eachDisagreementBetweenShapeAndPayloadIsNamed() {
        assertNull(ChunkFileFormat.disagreement(MemoryFormat.KV_2LTD, DType.BFLOAT16, TensorShape.of(2, 1, 1, 1), 4));
        assertEquals("payload length 5 disagrees with shape " + TensorShape.of(2, 1, 1, 1) + " of " + DType.BFLOAT16
                + " (4 bytes)", ChunkFileFormat.disagreement(MemoryFormat.KV_2LTD, DType.BFLOAT16, TensorShape.of(2, 1, 1, 1), 5));
        String empty = ChunkFileFormat.disagreement(MemoryFormat.KV_2LTD, DType.BFLOAT16, TensorShape.of(2, 1, 0, 1), 0);
        assertTrue(empty != null && empty.contains("no"), String.valueOf(empty));
        String huge = ChunkFileFormat.disagreement(MemoryFormat.KV_2LTD, DType.FLOAT64,
                TensorShape.of(2, 1 << 20, 1 << 20, 1 << 18), 0);
        assertTrue(huge != null && huge.contains("larger than any file"), String.valueOf(huge));
    }

    @Test
    void theCharactersOnEachSideOfTheSafeRangesAreEscaped() {
        assertEquals("azAZ09@._%+=,.lmc", ChunkFileNames.fileName("azAZ09@._%+=,"));
        assertEquals("~60~7B~5B~3A-~20.lmc", ChunkFileNames.fileName("`{[:/ "), "one past each range; a slash is a dash");
        assertEquals("~2Ea.lmc", ChunkFileNames.fileName(".a"), "a leading dot is escaped, a later one is not");
        assertEquals("~C3~A9.lmc", ChunkFileNames.fileName("é"), "each UTF-8 byte, high nibble first");
        assertEquals("~F0~9F~98~80x.lmc", ChunkFileNames.fileName("\uD83D\uDE00x"), "a surrogate pair is one code point");
    }

    @Test
    void aLongKeyEndsInItsSha256() throws Exception {
        String key = "m".repeat(300);
        String name = ChunkFileNames.fileName(key);
        String digest = HexFormat.of().withUpperCase().formatHex(
                MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
        assertEquals(ChunkFileNames.MAX_STEM + ChunkFileNames.SUFFIX.length(), name.length());
        assertTrue(name.endsWith("~~" + digest + ChunkFileNames.SUFFIX), name);
        assertEquals("m".repeat(ChunkFileNames.MAX_STEM) + ".lmc", ChunkFileNames.fileName("m".repeat(ChunkFileNames.MAX_STEM)),
                "a stem of exactly the limit is kept whole");
    }

    @Test
    void tempNamesOneCharacterOffAreNotTemp() {
        assertTrue(ChunkFileNames.isTemp("x.lmc.tmp-0-9"));
        assertTrue(ChunkFileNames.isTemp("x.lmc.tmp-12-345"));
        assertFalse(ChunkFileNames.isTemp(".lmc.tmp-1-2"), "no chunk name before the marker");
        assertFalse(ChunkFileNames.isTemp("x.lmc.tmp--2"));
        assertFalse(ChunkFileNames.isTemp("x.lmc.tmp-1-"));
        assertFalse(ChunkFileNames.isTemp("x.lmc.tmp-1-/"));
        assertFalse(ChunkFileNames.isTemp("x.lmc.tmp-1-:"));
        assertFalse(ChunkFileNames.isTemp("x.lmc.tmp-/-1"));
        assertFalse(ChunkFileNames.isTemp("x.lmc.tmp-:-1"));
    }

    @Test
    void theCheckRateIsBytesPerNanosecond() {
        assertEquals(2.0, new VerificationProgress(1, 1, 0, 0, 2_000_000_000L, 1_000_000_000L, true).gbPerSecond(), 1e-12);
        assertEquals(0.0, new VerificationProgress(1, 0, 0, 0, 0, 0, false).gbPerSecond());
    }
}
