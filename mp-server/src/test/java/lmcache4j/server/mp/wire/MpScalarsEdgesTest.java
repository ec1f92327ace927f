package lmcache4j.server.mp.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HexFormat;
import java.util.List;
import java.util.OptionalInt;
import java.util.OptionalLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The byte-level edges of the scalar and key decoders: a value with bytes after it, a str or bin
 * longer than its limit or than the frame, a uint64 past a long, and values skipped inside a
 * container. Each is a clear {@link MpProtocolException} naming the cause, never a wrong value.
 */
class MpScalarsEdgesTest {

    private static byte[] hex(String h) {
        return HexFormat.of().parseHex(h.replace(" ", ""));
    }

    private static byte[] trailing(byte[] frame) {
        byte[] out = java.util.Arrays.copyOf(frame, frame.length + 1); // a positive fixint 0 after the value
        return out;
    }

    private static void refused(String cause, Executable decode) {
        MpProtocolException e = assertThrows(MpProtocolException.class, decode);
        assertTrue(e.getMessage().contains(cause), e.getMessage() + " should say: " + cause);
    }

    @Test
    void aByteAfterAnyScalarIsRefused() {
        String after = "1 bytes after the value";
        refused(after, () -> MpScalars.decodeInt(trailing(MpScalars.encodeInt(5)), "n", 0, 10));
        refused(after, () -> MpScalars.decodeOptionalInt(trailing(MpScalars.encodeNil()), "n", 0, 10));
        refused(after, () -> MpScalars.decodeNumber(trailing(MpScalars.encodeFloat(1.5)), "t"));
        refused(after, () -> MpScalars.decodeString(trailing(MpScalars.encodeString("r")), "id", 8));
        refused(after, () -> MpScalars.decodeBool(trailing(MpScalars.encodeBool(true)), "force"));
        refused(after, () -> MpScalars.decodeBytes(trailing(MpScalars.encodeBytes(new byte[] {1})), "data", 8));
        refused(after, () -> MpScalars.checkWellFormed(trailing(hex("91 01")), "records"));
        byte[] key = MpKeyCodec.encode(new IpcCacheServerKey("m", 1, OptionalInt.of(0), new int[] {1, 2}, 0, 2, "r", "", 0),
                MpSchema.BASE);
        refused(after, () -> MpKeyCodec.decode(trailing(key), 16));
    }

    @Test
    void falseDecodesAsFalse() throws Exception {
        assertFalse(MpScalars.decodeBool(MpScalars.encodeBool(false), "force"));
        assertTrue(MpScalars.decodeBool(MpScalars.encodeBool(true), "force"));
    }

    @Test
    void aStrOrBinIsAcceptedUpToItsLimitAndNoFurther() throws Exception {
        assertEquals("abcd", MpScalars.decodeString(MpScalars.encodeString("abcd"), "id", 4));
        refused("4 bytes (at most 3)", () -> MpScalars.decodeString(MpScalars.encodeString("abcd"), "id", 3));
        assertArrayEquals(new byte[] {1, 2}, MpScalars.decodeBytes(MpScalars.encodeBytes(new byte[] {1, 2}), "data", 2));
        refused("2 bytes (at most 1)", () -> MpScalars.decodeBytes(MpScalars.encodeBytes(new byte[] {1, 2}), "data", 1));
    }

    @Test
    void aStrOrBinLongerThanTheFrameIsRefusedBeforeItIsRead() {
        String cause = "declares 5 bytes but the frame has 2 left";
        refused(cause, () -> MpScalars.decodeString(hex("a5 61 62"), "id", 100)); // fixstr of 5, 2 bytes follow
        refused(cause, () -> MpScalars.decodeBytes(hex("c4 05 01 02"), "data", 100)); // bin8 of 5
        refused(cause, () -> MpScalars.checkWellFormed(hex("91 a5 61 62"), "records")); // skipped inside an array
        refused(cause, () -> MpScalars.checkWellFormed(hex("91 c4 05 01 02"), "records"));
    }

    @Test
    void aUint64PastALongIsANumberButNotAnInt() throws Exception {
        byte[] max = hex("cf ffffffffffffffff");
        assertEquals(1.8446744073709552E19, MpScalars.decodeNumber(max, "timeout"));
        refused("out of range", () -> MpScalars.decodeInt(max, "n", Long.MIN_VALUE, Long.MAX_VALUE));
        assertEquals(1, MpScalars.decodeInt(hex("cf 0000000000000001"), "n", 0, 1), "a uint64 that fits is its value");
        assertEquals(OptionalLong.of(7), MpScalars.decodeOptionalInt(hex("cf 0000000000000007"), "n", 0, 7));
    }

    @Test
    void skippingAValueSkipsEachStrBinAndExtPayloadWhole() throws Exception {
        // {"a": "xyz", "b": bin [1, 2], "c": fixext1 (type 5) [9]}, then 7
        byte[] frame = hex("83 a1 61 a3 78 79 7a a1 62 c4 02 01 02 a1 63 d4 05 09 07");
        try (MpReader in = MpReader.of(frame)) {
            in.skipValue("extras");
            assertEquals(7, in.readLong("after", 0, 100), "the reader stands right after the map");
            in.expectEnd("after");
        }
        for (String value : List.of("a3 78 79 7a", "c4 02 01 02", "d4 05 09")) {
            try (MpReader in = MpReader.of(hex("92 " + value + " 07"))) {
                in.skipValue("array");
                assertEquals(0, in.remaining(), value + " and 7 skipped");
            }
        }
    }
}
