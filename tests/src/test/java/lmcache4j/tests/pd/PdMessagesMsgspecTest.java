package lmcache4j.tests.pd;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.json.Json;
import lmcache4j.engine.pd.wire.AllocRequest;
import lmcache4j.engine.pd.wire.AllocResponse;
import lmcache4j.engine.pd.wire.PdMessages;
import lmcache4j.engine.pd.wire.ProxyNotif;
import lmcache4j.tests.TestPython;

/**
 * lmcache4j's PD messages against the real msgspec with LMCache's tagged structs
 * (tests/python/pd_messages.py): an AllocRequest and a ProxyNotif are msgspec's bytes exactly;
 * msgspec decodes every message lmcache4j writes (an AllocResponse's extra {@code error} field
 * skipped, as msgspec skips unknown fields), and lmcache4j decodes msgspec's.
 */
class PdMessagesMsgspecTest {
    private static final String KEY = "m@1@0@0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef@half";

    @Test
    void lmcache4jsMessagesAreMsgspecsAndBackAgain(@TempDir Path dir) throws Exception {
        TestPython.require();
        AllocRequest request = new AllocRequest(List.of(KEY, KEY.replace('0', '1')), 1, List.of(2, 32, 256, 1024), "half", 17);
        AllocResponse response = new AllocResponse(List.of(0), List.of(7L, -1L), "");
        ProxyNotif notice = new ProxyNotif("pd-7-abc");
        String spec = Json.write(Map.of(
                "encode", List.of(
                        Map.of("type", "AllocRequest", "keys", request.keys(), "fmt", 1L, "shape", List.of(2L, 32L, 256L, 1024L),
                                "dtype", "half", "last_chunk_toks", 17L),
                        Map.of("type", "AllocResponse", "already_sent_indexes", List.of(0L), "remote_indexes", List.of(7L, -1L)),
                        Map.of("type", "ProxyNotif", "req_id", "pd-7-abc")),
                "decode", List.of(hex(PdMessages.encode(request)), hex(PdMessages.encode(response)),
                        hex(PdMessages.encode(notice)))));
        Map<String, Object> answer = run(dir, spec);
        List<?> encoded = (List<?>) answer.get("encoded");
        assertEquals(encoded.get(0), hex(PdMessages.encode(request)), "msgspec's AllocRequest bytes are lmcache4j's");
        assertEquals(encoded.get(2), hex(PdMessages.encode(notice)), "msgspec's ProxyNotif bytes are lmcache4j's");
        assertEquals(request, PdMessages.decodeAllocRequest(bytes(encoded.get(0))));
        assertEquals(response, PdMessages.decodeAllocResponse(bytes(encoded.get(1))), "msgspec's AllocResponse, no error field");
        assertEquals(notice, PdMessages.decodeProxyNotif(bytes(encoded.get(2))));
        List<?> decoded = (List<?>) answer.get("decoded");
        assertEquals(Map.of("type", "AllocRequest", "keys", request.keys(), "fmt", 1L, "shape", List.of(2L, 32L, 256L, 1024L),
                "dtype", "half", "last_chunk_toks", 17L), decoded.get(0));
        assertEquals(Map.of("type", "AllocResponse", "already_sent_indexes", List.of(0L), "remote_indexes", List.of(7L, -1L)),
                decoded.get(1));
        assertEquals(Map.of("type", "ProxyNotif", "req_id", "pd-7-abc"), decoded.get(2));
    }

    private static String hex(byte[] b) {
        return HexFormat.of().formatHex(b);
    }

    private static byte[] bytes(Object hex) {
        return HexFormat.of().parseHex((String) hex);
    }

    private static Map<String, Object> run(Path dir, String spec) throws Exception {
        Path err = dir.resolve("python.stderr");
        Process p = new ProcessBuilder(TestPython.script("pd_messages.py", List.of(spec))).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the Python side did not finish\n" + out + Files.readString(err));
        }
        assertEquals(0, p.exitValue(), "python: " + out + Files.readString(err));
        return Json.parseObject(out.strip());
    }
}
