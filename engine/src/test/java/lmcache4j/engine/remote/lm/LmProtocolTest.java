package lmcache4j.engine.remote.lm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.json.Json;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmProtocol.ClientHeader;

/**
 * lm:// frames against golden bytes that LMCache's own {@code lmcache/v1/protocol.py} (commit
 * {@link LmProtocol#LMCACHE_COMMIT}) packed: {@code golden/lm-protocol/lm-frames.json}, written by
 * {@code generate-lm-frames.py} (see the README beside it). Every client frame LMCache sends must
 * decode to its fields here, every frame lmcache4j encodes for those fields must be LMCache's bytes,
 * and the same for the server's replies.
 */
class LmProtocolTest {
    private static final HexFormat HEX = HexFormat.of();

    @SuppressWarnings("unchecked")
    private static Map<String, Object> golden() throws IOException {
        try (InputStream in = LmProtocolTest.class.getResourceAsStream("/golden/lm-protocol/lm-frames.json")) {
            return (Map<String, Object>) Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> frames(String side) throws IOException {
        return (List<Map<String, Object>>) golden().get(side);
    }

    private static int field(Map<String, Object> fields, String name) {
        return ((Long) fields.get(name)).intValue();
    }

    @SuppressWarnings("unchecked")
    private static RemoteMetadata metadataOf(Map<String, Object> f) {
        List<Long> shape = (List<Long>) f.get("shape");
        int dtype = field(f, "dtype");
        return RemoteMetadata.decode(new LmProtocol.ClientHeader(1, new int[] {field(f, "length"), field(f, "fmt"), dtype,
                shape.get(0).intValue(), shape.get(1).intValue(), shape.get(2).intValue(), shape.get(3).intValue()}, 0, "k")
                .metadataBytes());
    }

    @Test
    void frameSizesAreLmcaches() throws IOException {
        Map<String, Object> g = golden();
        assertEquals(((Long) g.get("client_frame_bytes")).intValue(), LmProtocol.CLIENT_HEADER_BYTES);
        assertEquals(((Long) g.get("server_frame_bytes")).intValue(), LmProtocol.SERVER_HEADER_BYTES);
    }

    @Test
    @SuppressWarnings("unchecked")
    void lmcacheClientFramesDecodeToTheirFields() throws Exception {
        for (Map<String, Object> frame : frames("client")) {
            Map<String, Object> f = (Map<String, Object>) frame.get("fields");
            ClientHeader h = LmProtocol.decodeClient(HEX.parseHex((String) frame.get("hex")));
            String name = (String) frame.get("name");
            assertEquals(field(f, "command"), h.command(), name);
            assertEquals(field(f, "length"), h.length(), name);
            assertEquals(field(f, "location"), h.location(), name);
            assertEquals(f.get("key"), h.key(), name);
            List<Long> shape = (List<Long>) f.get("shape");
            int[] meta = {field(f, "length"), field(f, "fmt"), field(f, "dtype"), shape.get(0).intValue(),
                    shape.get(1).intValue(), shape.get(2).intValue(), shape.get(3).intValue()};
            assertArrayEquals(meta, h.meta(), name);
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void lmcache4jClientFramesAreLmcachesBytes() throws Exception {
        for (Map<String, Object> frame : frames("client")) {
            Map<String, Object> f = (Map<String, Object>) frame.get("fields");
            String name = (String) frame.get("name");
            int command = field(f, "command");
            String key = (String) f.get("key");
            byte[] ours = command == LmProtocol.PUT
                    ? LmProtocol.encodeClient(command, metadataOf(f), field(f, "location"), key)
                    : LmProtocol.encodeClient(command, field(f, "length"), key);
            assertEquals(frame.get("hex"), HEX.formatHex(ours), name);
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void serverRepliesAreLmcachesBytesBothWays() throws Exception {
        for (Map<String, Object> frame : frames("server")) {
            Map<String, Object> f = (Map<String, Object>) frame.get("fields");
            String name = (String) frame.get("name");
            byte[] lmcache = HEX.parseHex((String) frame.get("hex"));
            assertEquals(field(f, "code"), LmProtocol.replyCode(lmcache), name);
            assertEquals(field(f, "location"), LmProtocol.replyLocation(lmcache), name);
            byte[] ours;
            if (field(f, "length") == 0) { // a code-only reply with LMCache's dummy metadata
                ours = LmProtocol.encodeServer(field(f, "code"));
            } else {
                RemoteMetadata meta = metadataOf(f);
                assertEquals(meta, LmProtocol.replyMetadata(lmcache), name);
                ours = LmProtocol.encodeServer(field(f, "code"), meta.toBytes(), field(f, "location"));
            }
            assertEquals(frame.get("hex"), HEX.formatHex(ours), name);
        }
    }

    @Test
    void remoteMetadataIsLmcaches() throws Exception {
        Map<String, Object> llama = frames("metadata").get(0);
        RemoteMetadata meta = new RemoteMetadata(33554432, MemoryFormat.KV_2LTD, Optional.of(DType.BFLOAT16),
                TensorShape.of(2, 32, 256, 1024));
        assertEquals(llama.get("hex"), HEX.formatHex(meta.toBytes()));
        assertEquals(meta, RemoteMetadata.decode(HEX.parseHex((String) llama.get("hex"))));
    }

    @Test
    void clientRoundTripWithUnicodeKey() throws Exception {
        RemoteMetadata meta = new RemoteMetadata(12, MemoryFormat.BINARY_BUFFER, Optional.empty(), TensorShape.of(12, 0, 0, 0));
        String key = "model/ü@2@1@00ff@half@tag%x";
        ClientHeader h = LmProtocol.decodeClient(LmProtocol.encodeClient(LmProtocol.PUT, meta, key));
        assertEquals(LmProtocol.PUT, h.command());
        assertEquals(key, h.key());
        assertEquals(12, h.length());
        assertEquals(LmProtocol.LOCATION_NONE, h.location());
        assertEquals(meta, RemoteMetadata.decode(h.metadataBytes()));
        assertArrayEquals(meta.toBytes(), h.metadataBytes());
    }

    @Test
    void badKeysAndFrames() {
        assertThrows(IllegalArgumentException.class, () -> LmProtocol.encodeClient(LmProtocol.GET, 0, "x".repeat(151)));
        assertEquals(186, LmProtocol.encodeClient(LmProtocol.GET, 0, "x".repeat(150)).length);
        int keyAt = LmProtocol.CLIENT_HEADER_BYTES - LmProtocol.KEY_BYTES;
        byte[] bad = LmProtocol.encodeClient(LmProtocol.GET, 0, "k");
        bad[keyAt] = (byte) 0xff;
        assertThrows(LmProtocol.ProtocolException.class, () -> LmProtocol.decodeClient(bad));
        byte[] ctl = LmProtocol.encodeClient(LmProtocol.GET, 0, "kk");
        ctl[keyAt + 1] = 0;
        assertThrows(LmProtocol.ProtocolException.class, () -> LmProtocol.decodeClient(ctl));
        assertThrows(LmProtocol.ProtocolException.class, () -> LmProtocol.decodeClient(new byte[10]));
        // the older 182-byte form is not this protocol
        assertThrows(LmProtocol.ProtocolException.class, () -> LmProtocol.decodeClient(new byte[182]));
    }
}
