package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.engine.json.Json;

/**
 * Storage keys against {@code golden/storage-keys/storage-keys.json}, which its generator writes with
 * the real cbor2 from LMCache's current token database and key string (the 64-bit integer chain in
 * unpadded hex) and from the older digest form: for every prompt, seed, chunk size, model, world
 * size, worker, dtype and tags there, lmcache4j's token database in each {@link StorageKeys} form
 * writes exactly the generator's strings, and parses them back to equal keys.
 */
class StorageKeysGoldenTest {
    @SuppressWarnings("unchecked")
    private static Map<String, Object> golden() throws IOException {
        try (InputStream in = StorageKeysGoldenTest.class.getResourceAsStream("/golden/storage-keys/storage-keys.json")) {
            assertTrue(in != null, "golden/storage-keys/storage-keys.json is on the test classpath");
            return Json.parseObject(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    @SuppressWarnings("unchecked")
    private static int[] ints(Object list) {
        return ((List<Object>) list).stream().mapToInt(t -> Math.toIntExact((Long) t)).toArray();
    }

    @Test
    @SuppressWarnings("unchecked")
    void bothFormsWriteTheGeneratorsKeyStrings() throws IOException {
        Map<String, Object> g = golden();
        Map<String, Object> prompts = (Map<String, Object>) g.get("prompts");
        List<Object> cases = (List<Object>) g.get("cases");
        assertEquals(72, cases.size());
        int keysChecked = 0;
        for (Object o : cases) {
            Map<String, Object> c = (Map<String, Object>) o;
            String name = (String) c.get("name");
            int[] tokens = ints(prompts.get((String) c.get("prompt")));
            ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, (String) c.get("seed"));
            KeyFactory identity = new KeyFactory((String) c.get("model"), Math.toIntExact((Long) c.get("world_size")),
                    Math.toIntExact((Long) c.get("worker_id")), DType.fromKeyName((String) c.get("dtype")));
            Map<String, String> configs = new LinkedHashMap<>();
            for (List<String> tag : (List<List<String>>) c.get("tags")) {
                configs.put(CacheEngineKey.TAG_PREFIX + tag.get(0), tag.get(1));
            }
            int chunkSize = Math.toIntExact((Long) c.get("chunk_size"));
            boolean unfull = (Boolean) c.get("save_unfull_chunk");
            int[] ends = ints(c.get("ends"));
            for (StorageKeys form : StorageKeys.values()) {
                List<String> expected = (List<String>) c.get(form == StorageKeys.LMCACHE ? "keys" : "digest_keys");
                List<ChunkRange> ranges = new ChunkedTokenDatabase(chunkSize, unfull, hasher, identity, form)
                        .processTokens(tokens, configs);
                assertEquals(expected.size(), ranges.size(), name + " " + form);
                for (int i = 0; i < ranges.size(); i++) {
                    ChunkRange r = ranges.get(i);
                    assertEquals(ends[i], r.end(), name);
                    assertEquals(expected.get(i), r.key().toKeyString(), name + " " + form + " chunk " + i);
                    assertEquals(r.key(), CacheEngineKey.parse(expected.get(i)), name + " " + form + " parse " + i);
                    assertEquals(form == StorageKeys.LMCACHE, r.key().chunkHash().isInteger(), name);
                    keysChecked++;
                }
            }
        }
        assertTrue(keysChecked > 2000, "checked " + keysChecked + " keys");
    }

    @Test
    @SuppressWarnings("unchecked")
    void segmentsAreHashedWithNoneHashInTheParentsPlace() throws IOException {
        Map<String, Object> g = golden();
        Map<String, Object> prompts = (Map<String, Object>) g.get("prompts");
        for (Object o : (List<Object>) g.get("segments")) {
            Map<String, Object> s = (Map<String, Object>) o;
            int[] tokens = ints(prompts.get((String) s.get("prompt")));
            ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, (String) s.get("seed"));
            assertEquals(s.get("hash_hex"), hasher.segment(tokens, 0, tokens.length, StorageKeys.LMCACHE).toHex(),
                    s.get("prompt") + " seed " + s.get("seed"));
        }
    }

    @Test
    void longChainsTakeThePipelineAndAgreeWithTheOneThreadChain() {
        // 40 chunks of 16: above the pipeline's threshold, so intChain takes the helper thread.
        int[] tokens = new int[640];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = (i * 2654435761L % 151936 == 0) ? 5 : (int) (i * 2654435761L % 151936);
        }
        ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");
        List<ChunkHash> piped = hasher.intChain(tokens, 16, true);
        long parent = hasher.noneIntKey();
        for (int c = 0; c < piped.size(); c++) {
            parent = hasher.nextIntKey(parent, tokens, c * 16, c * 16 + 16);
            assertEquals(ChunkHash.ofLong(parent), piped.get(c), "chunk " + c);
        }
    }
}
