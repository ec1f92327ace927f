package lmcache4j.engine.remote.lm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HexFormat;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmProtocol.ClientHeader;

/**
 * Golden bytes derived by hand from LMCache's {@code struct.pack("iiiiiiii150s", ...)} (native
 * mode = little-endian int32, no padding) with the key right-padded with spaces.
 */
class LmProtocolTest {
    private static final HexFormat HEX = HexFormat.of();

    private static String spaces(int n) {
        return "20".repeat(n);
    }

    @Test
    void putHeaderGoldenBytes() {
        RemoteMetadata meta = new RemoteMetadata(65536, MemoryFormat.KV_2LTD, Optional.of(DType.BFLOAT16),
                TensorShape.of(2, 2, 256, 32));
        byte[] bytes = LmProtocol.encodeClient(LmProtocol.PUT, meta, "m@1@0@ab@bfloat16");
        String expected = "01000000" + "00000100" + "01000000" + "03000000" + "02000000" + "02000000" + "00010000"
                + "20000000" + HEX.formatHex("m@1@0@ab@bfloat16".getBytes()) + spaces(150 - 17);
        assertEquals(expected, HEX.formatHex(bytes));
        assertEquals(182, bytes.length);
    }

    @Test
    void getHeaderAndReplyGoldenBytes() {
        assertEquals("02000000" + "00000000" + "01000000" + "02000000" + "00000000".repeat(4) + "6b" + spaces(149),
                HEX.formatHex(LmProtocol.encodeClient(LmProtocol.GET, 0, "k")));
        assertEquals("c8000000" + "00000000" + "01000000" + "02000000" + "00000000".repeat(4),
                HEX.formatHex(LmProtocol.encodeServer(LmProtocol.SUCCESS)));
        assertEquals("90010000", HEX.formatHex(LmProtocol.encodeServer(LmProtocol.FAIL)).substring(0, 8));
    }

    @Test
    void clientRoundTrip() throws Exception {
        RemoteMetadata meta = new RemoteMetadata(12, MemoryFormat.BINARY_BUFFER, Optional.empty(), TensorShape.of(12, 0, 0, 0));
        String key = "model/ü@2@1@00ff@half@tag%x";
        ClientHeader h = LmProtocol.decodeClient(LmProtocol.encodeClient(LmProtocol.PUT, meta, key));
        assertEquals(LmProtocol.PUT, h.command());
        assertEquals(key, h.key());
        assertEquals(12, h.length());
        assertEquals(meta, RemoteMetadata.decode(h.metadataBytes()));
        assertArrayEquals(meta.toBytes(), h.metadataBytes());
        ClientHeader health = LmProtocol.decodeClient(LmProtocol.encodeClient(LmProtocol.HEALTH, 0, ""));
        assertEquals("", health.key());
    }

    @Test
    void serverRoundTrip() {
        RemoteMetadata meta = new RemoteMetadata(64, MemoryFormat.KV_2LTD, Optional.of(DType.FLOAT32),
                TensorShape.of(1, 2, 2, 4));
        byte[] reply = LmProtocol.encodeServer(LmProtocol.SUCCESS, meta.toBytes());
        assertEquals(32, reply.length);
        assertEquals(LmProtocol.SUCCESS, LmProtocol.replyCode(reply));
        assertEquals(meta, LmProtocol.replyMetadata(reply));
    }

    @Test
    void badKeys() {
        assertThrows(IllegalArgumentException.class, () -> LmProtocol.encodeClient(LmProtocol.GET, 0, "x".repeat(151)));
        assertEquals(182, LmProtocol.encodeClient(LmProtocol.GET, 0, "x".repeat(150)).length);
        byte[] bad = LmProtocol.encodeClient(LmProtocol.GET, 0, "k");
        bad[32] = (byte) 0xff;
        assertThrows(LmProtocol.ProtocolException.class, () -> LmProtocol.decodeClient(bad));
        byte[] ctl = LmProtocol.encodeClient(LmProtocol.GET, 0, "k");
        ctl[33] = 0;
        assertThrows(LmProtocol.ProtocolException.class, () -> LmProtocol.decodeClient(ctl));
        assertThrows(LmProtocol.ProtocolException.class, () -> LmProtocol.decodeClient(new byte[10]));
    }
}
