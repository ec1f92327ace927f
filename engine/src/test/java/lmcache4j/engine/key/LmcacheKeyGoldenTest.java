package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import lmcache4j.engine.json.Json;

/**
 * Key strings that LMCache's own {@code CacheEngineKey.to_string()} and
 * {@code LayerCacheEngineKey.to_string()} wrote ({@code lmcache/utils.py}, executed by
 * {@code golden/lm-protocol/generate-lm-frames.py}): lmcache4j parses each into the same fields and
 * writes the same string back, for whole-chunk and layer keys, tags, a hash with a leading zero
 * byte, and an fp8 dtype.
 */
class LmcacheKeyGoldenTest {

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> keys() throws IOException {
        try (InputStream in = LmcacheKeyGoldenTest.class.getResourceAsStream("/golden/lm-protocol/lm-frames.json")) {
            Map<String, Object> g = (Map<String, Object>) Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            return (List<Map<String, Object>>) g.get("keys");
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void lmcacheKeyStringsRoundTrip() throws IOException {
        List<Map<String, Object>> keys = keys();
        assertEquals(3, keys.size());
        for (Map<String, Object> k : keys) {
            String name = (String) k.get("name");
            String keyString = (String) k.get("key");
            CacheEngineKey parsed = CacheEngineKey.parse(keyString);
            assertEquals(k.get("model"), parsed.modelName(), name);
            assertEquals(((Long) k.get("world_size")).intValue(), parsed.worldSize(), name);
            assertEquals(((Long) k.get("worker_id")).intValue(), parsed.workerId(), name);
            assertEquals(k.get("chunk_hash"), parsed.chunkHash().toHex(), name);
            assertEquals(k.get("dtype"), parsed.dtype().keyName(), name);
            Map<String, String> tags = new LinkedHashMap<>();
            for (List<String> tag : (List<List<String>>) k.get("tags")) {
                tags.put(tag.get(0), tag.get(1));
            }
            assertEquals(tags, parsed.tags(), name);
            assertEquals(keyString, parsed.toKeyString(), name);
            assertEquals(k.get("layer7_key"), parsed.layer(7).toKeyString(), name);
            assertEquals(parsed.layer(7), CacheKeys.parse((String) k.get("layer7_key")), name);
        }
    }
}
