package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HexFormat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Canonical heads at every length boundary, checked against RFC 8949's own examples. */
class CborEncoderTest {
    private static final HexFormat HEX = HexFormat.of();

    @ParameterizedTest
    @CsvSource({
        "0, 00", "1, 01", "10, 0a", "23, 17", "24, 1818", "25, 1819", "100, 1864", "255, 18ff",
        "256, 190100", "1000, 1903e8", "65535, 19ffff", "65536, 1a00010000", "1000000, 1a000f4240",
        "2147483647, 1a7fffffff",
        "-1, 20", "-10, 29", "-24, 37", "-25, 3818", "-100, 3863", "-256, 38ff", "-257, 390100",
        "-1000, 3903e7", "-65536, 39ffff", "-65537, 3a00010000", "-2147483648, 3a7fffffff"})
    void integersTakeTheShortestHead(int value, String hex) {
        CborEncoder cbor = new CborEncoder(1);
        cbor.writeInt(value);
        assertEquals(hex, HEX.formatHex(cbor.toByteArray()));
    }

    @ParameterizedTest
    @CsvSource({"0, 80", "23, 97", "24, 9818", "255, 98ff", "256, 990100", "65535, 99ffff", "65536, 9a00010000",
        "4294967295, 9affffffff", "4294967296, 9b0000000100000000"})
    void arrayHeadsTakeTheShortestForm(long size, String hex) {
        CborEncoder cbor = new CborEncoder(1);
        cbor.arrayHead(size);
        assertEquals(hex, HEX.formatHex(cbor.toByteArray()));
    }

    @Test
    void stringsBytesAndNull() {
        CborEncoder cbor = new CborEncoder(1);
        cbor.writeText("IETF"); // RFC 8949 Appendix A
        cbor.writeText("\u00fc");
        cbor.writeText("");
        cbor.writeBytes(ChunkHash.fromHex("01020304"));
        cbor.writeNull();
        assertEquals("6449455446" + "62c3bc" + "60" + "4401020304" + "f6", HEX.formatHex(cbor.toByteArray()));
    }

    @Test
    void resetReusesTheBufferAndItGrowsAsNeeded() {
        CborEncoder cbor = new CborEncoder(1);
        int[] tokens = new int[1000];
        java.util.Arrays.fill(tokens, 70000);
        cbor.writeIntArray(tokens, 0, tokens.length);
        assertEquals(3 + 5 * 1000, cbor.length());
        byte[] grown = cbor.buffer();
        cbor.reset();
        cbor.writeIntArray(tokens, 10, 12);
        assertEquals("821a000111701a00011170", HEX.formatHex(cbor.toByteArray()));
        assertEquals(grown, cbor.buffer(), "the buffer is reused, not reallocated");
    }
}
