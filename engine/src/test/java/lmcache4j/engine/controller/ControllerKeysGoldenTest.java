package lmcache4j.engine.controller;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import lmcache4j.engine.json.Json;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.HashAlgorithm;
import org.junit.jupiter.api.Test;

/**
 * The control plane's chunk keys against {@code golden/controller-keys/controller-keys.json}, written
 * by its generator with the real cbor2 from LMCache's token database (the integer chain) and vLLM's
 * block hashing folded for KV events: the same tokens, seed and chunk size give the same integers.
 */
class ControllerKeysGoldenTest {
    @SuppressWarnings("unchecked")
    private static Map<String, Object> golden() throws IOException {
        try (InputStream in = ControllerKeysGoldenTest.class.getResourceAsStream("/golden/controller-keys/controller-keys.json")) {
            assertTrue(in != null, "golden/controller-keys/controller-keys.json is on the test classpath");
            return Json.parseObject(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    private static long bits(Object n) {
        return n instanceof BigInteger b ? b.longValue() : (Long) n;
    }

    @Test
    @SuppressWarnings("unchecked")
    void bothSchemesGiveTheGeneratorsIntegers() throws IOException {
        Map<String, Object> g = golden();
        Map<String, Object> prompts = (Map<String, Object>) g.get("prompts");
        List<Object> cases = (List<Object>) g.get("cases");
        assertEquals(30, cases.size());
        for (Object o : cases) {
            Map<String, Object> c = (Map<String, Object>) o;
            String name = (String) c.get("name");
            int[] tokens = ((List<Object>) prompts.get((String) c.get("prompt"))).stream().mapToInt(t -> Math.toIntExact((Long) t)).toArray();
            ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, (String) c.get("seed"));
            int chunkSize = Math.toIntExact((Long) c.get("chunk_size"));
            List<ChunkHash> chain = hasher.chain(tokens, chunkSize, (Boolean) c.get("save_unfull_chunk"));
            int[] ends = ((List<Object>) c.get("ends")).stream().mapToInt(e -> Math.toIntExact((Long) e)).toArray();
            assertEquals(chain.size(), ends.length, name);
            for (String scheme : List.of("lmcache", "vllm")) {
                long[] expected = ((List<Object>) c.get(scheme)).stream().mapToLong(ControllerKeysGoldenTest::bits).toArray();
                long[] actual = ControllerKeys.keys(ControllerKeys.Scheme.fromName(scheme), hasher, tokens, chain, ends);
                assertArrayEquals(expected, actual, name + " " + scheme);
            }
        }
    }

    @Test
    void lmcachesKeysForAKnownPromptAreTheSameUnsignedIntegersLmcachePrints() {
        // list(range(600)), chunk 256, PYTHONHASHSEED=0, partial chunk kept: LMCache's keys as Python prints them.
        int[] tokens = new int[600];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = i;
        }
        ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");
        assertEquals("5625442194607170974", ControllerKeys.toDecimal(hasher.noneIntKey()));
        long[] keys = ControllerKeys.keys(ControllerKeys.Scheme.LMCACHE, hasher, tokens, hasher.chain(tokens, 256, true),
                new int[] {256, 512, 600});
        assertEquals(List.of("13306273019646830501", "14713433792384882213", "7371713932882849551"),
                Arrays.stream(keys).mapToObj(ControllerKeys::toDecimal).toList());
    }

    @Test
    void theIndexMapsBothWaysForgetsTheOldestAndKnowsEveryDigestUnderVllm() {
        ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");
        List<ChunkHash> digests = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            digests.add(hasher.next(hasher.noneHash(), new int[] {i}, 0, 1));
        }
        ControllerKeys.Index index = new ControllerKeys.Index(ControllerKeys.Scheme.LMCACHE, 3);
        for (int i = 0; i < 5; i++) {
            index.record(digests.get(i), 1000 + i);
        }
        assertEquals(3, index.size());
        assertEquals(OptionalLong.empty(), index.key(digests.get(0)), "the oldest is forgotten");
        assertEquals(OptionalLong.of(1004), index.key(digests.get(4)));
        assertEquals(digests.get(3), index.digest(1003).orElseThrow());
        assertTrue(index.digest(1000).isEmpty());
        // A digest recorded again as an equal but distinct instance (every request hashes anew) is
        // still forgotten whole when it ages out: no key keeps pointing at it.
        ControllerKeys.Index again = new ControllerKeys.Index(ControllerKeys.Scheme.LMCACHE, 2);
        again.record(digests.get(0), 2000);
        again.record(ChunkHash.of(digests.get(0).toBytes()), 2000);
        again.record(digests.get(1), 2001);
        again.record(digests.get(2), 2002);
        assertTrue(again.digest(2000).isEmpty(), "the aged-out digest's key is gone too");
        ControllerKeys.Index vllm = new ControllerKeys.Index(ControllerKeys.Scheme.VLLM, 1);
        assertEquals(OptionalLong.of(ControllerKeys.vllmFold(digests.get(2))), vllm.key(digests.get(2)),
                "vLLM's key needs no tokens: every digest has one");
        assertThrows(IllegalArgumentException.class, () -> ControllerKeys.Scheme.fromName("first8"));
        assertThrows(IllegalArgumentException.class, () -> new ControllerKeys.Index(ControllerKeys.Scheme.VLLM, 0));
    }
}
