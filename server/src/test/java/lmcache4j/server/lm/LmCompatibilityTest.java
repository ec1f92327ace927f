package lmcache4j.server.lm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.engine.json.Json;
import lmcache4j.engine.remote.lm.LmProtocol;

/**
 * LMCache's client, as its bytes: the golden frames LMCache's own {@code protocol.py} packed
 * ({@code golden/lm-protocol/lm-frames.json}) are sent to a running lmcache4j server exactly as
 * LMCache's {@code LMCServerConnector} sends them (PUT header + payload, no reply; GET/EXIST/HEALTH
 * header, then a 36-byte reply), and every reply must be the bytes LMCache's own server would send.
 */
@Timeout(60)
class LmCompatibilityTest {
    private static final HexFormat HEX = HexFormat.of();

    @SuppressWarnings("unchecked")
    private static Map<String, byte[]> frames(String side) throws IOException {
        try (InputStream in = LmCompatibilityTest.class.getResourceAsStream("/golden/lm-protocol/lm-frames.json")) {
            Map<String, Object> g = (Map<String, Object>) Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            Map<String, byte[]> out = new java.util.HashMap<>();
            for (Map<String, Object> f : (List<Map<String, Object>>) g.get(side)) {
                out.put((String) f.get("name"), HEX.parseHex((String) f.get("hex")));
            }
            return out;
        }
    }

    private static byte[] reply(SocketChannel ch) throws IOException {
        return LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES);
    }

    @Test
    void lmcacheClientFramesGetLmcacheServerReplies() throws Exception {
        Map<String, byte[]> client = frames("client");
        Map<String, byte[]> server = frames("server");
        int llamaBytes = 2 * 32 * 256 * 1024 * 2;
        try (LmCacheServer s = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 2L * llamaBytes, Optional.empty(),
                llamaBytes);
             SocketChannel ch = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), s.port()))) {
            LmProtocol.writeFully(ch, ByteBuffer.wrap(client.get("health")));
            assertEquals(HEX.formatHex(server.get("success_code_only")), HEX.formatHex(reply(ch)), "HEALTH");

            LmProtocol.writeFully(ch, ByteBuffer.wrap(client.get("get")));
            assertEquals(HEX.formatHex(server.get("miss")), HEX.formatHex(reply(ch)), "GET of an absent key");

            // PUT (location LocalCPUBackend) then EXIST of the same key
            byte[] small = new byte[64];
            new Random(1).nextBytes(small);
            LmProtocol.writeFully(ch, ByteBuffer.wrap(client.get("put_fp32_cpu_location")), ByteBuffer.wrap(small));
            LmProtocol.writeFully(ch, ByteBuffer.wrap(client.get("exist")));
            assertEquals(HEX.formatHex(server.get("success_code_only")), HEX.formatHex(reply(ch)), "EXIST after PUT");

            // a Llama-3.1-8B chunk: the GET reply header is LMCache's byte for byte, then the payload
            ByteBuffer payload = ByteBuffer.allocateDirect(llamaBytes);
            Random rnd = new Random(2);
            while (payload.hasRemaining()) {
                payload.put((byte) rnd.nextInt());
            }
            LmProtocol.writeFully(ch, ByteBuffer.wrap(client.get("put_llama_chunk")), payload.flip());
            LmProtocol.writeFully(ch, ByteBuffer.wrap(client.get("get")));
            assertEquals(HEX.formatHex(server.get("get_hit_llama_chunk")), HEX.formatHex(reply(ch)), "GET hit");
            ByteBuffer back = ByteBuffer.allocateDirect(llamaBytes);
            LmProtocol.readFully(ch, back);
            assertEquals(0, back.flip().compareTo(payload.rewind()), "the payload came back changed");

            // LIST: LMCache's server sends nothing; lmcache4j's answers FAIL (a documented difference)
            LmProtocol.writeFully(ch, ByteBuffer.wrap(client.get("list")));
            assertEquals(HEX.formatHex(server.get("miss")), HEX.formatHex(reply(ch)), "LIST");
            assertEquals(0, s.stats().protocolErrors());
        }
    }
}
