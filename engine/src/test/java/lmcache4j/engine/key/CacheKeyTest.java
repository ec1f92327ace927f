package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;

import lmcache4j.allocator.DType;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class CacheKeyTest {
    private static final ChunkHash HASH = ChunkHash.fromHex("00ff10ab");

    @Test
    void stringFormIsLmcaches2026Form() {
        CacheEngineKey key = new CacheEngineKey("meta-llama/Llama-3.1-8B", 2, 1, HASH, DType.FLOAT16,
                Map.of("user", "alice"));
        assertEquals("meta-llama/Llama-3.1-8B@2@1@00ff10ab@half@user%alice", key.toKeyString());
        assertEquals("meta-llama/Llama-3.1-8B@2@1@00ff10ab@half@7@user%alice", key.layer(7).toKeyString());
        assertEquals(key, CacheEngineKey.parse(key.toKeyString()));
        assertEquals(key.layer(7), CacheKeys.parse(key.layer(7).toKeyString()));
    }

    @Test
    void onlyLmcacheTagRequestConfigsBecomeTagsAndTakePartInEquality() {
        Map<String, String> configs = new LinkedHashMap<>();
        configs.put("lmcache.tag.tenant", "t1");
        configs.put("lmcache.other", "ignored");
        Map<String, String> tags = CacheEngineKey.tagsOf(configs);
        assertEquals(Map.of("tenant", "t1"), tags);
        CacheEngineKey tagged = new CacheEngineKey("m", 1, 0, HASH, DType.BFLOAT16, tags);
        CacheEngineKey plain = new CacheEngineKey("m", 1, 0, HASH, DType.BFLOAT16);
        assertNotEquals(tagged, plain);
        assertEquals(plain, plain.withWorkerId(0));
        assertEquals(4, plain.splitLayers(4).size());
        assertEquals(plain.layer(0), plain.layer(3).firstLayer());
    }

    @Test
    void malformedStringsAreRejectedWithTheReason() {
        for (String bad : new String[] {"m@1@0@abcd", "m@x@0@abcd@half", "m@1@0@xyz1@half", "m@1@0@0ab@half", "m@1@0@abcdef0123456789a@half",
                "m@1@0@abcd@fp4", "m@1@0@abcd@half@notatag", "m@1@3@abcd@half", "@1@0@abcd@half"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CacheKeys.parse(bad), bad);
            assertTrue(e.getMessage().startsWith("malformed cache key '" + bad + "'"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> CacheEngineKey.parse("m@1@0@abcd@half@3"));
        assertThrows(IllegalArgumentException.class, () -> new CacheEngineKey("a@b", 1, 0, HASH, DType.FLOAT16));
    }

    @Property
    void parseIsTheExactInverseOfTheStringForm(@ForAll("keys") CacheKey key) {
        assertEquals(key, CacheKeys.parse(key.toKeyString()));
        assertEquals(key.toKeyString(), CacheKeys.parse(key.toKeyString()).toKeyString());
    }

    @Provide
    Arbitrary<CacheKey> keys() {
        Arbitrary<String> names = Arbitraries.strings().withChars("abcXYZ/-_.%0123456789").ofMinLength(1).ofMaxLength(20);
        Arbitrary<String> tagNames = Arbitraries.strings().alpha().ofMinLength(1).ofMaxLength(8);
        Arbitrary<Map<String, String>> tags = Arbitraries.maps(tagNames, names).ofMaxSize(3);
        // Either form: LMCache's integers (any 64 bits), digests of more than 8 bytes, or shorter digests
        // whose first hex digit is 0 (one of 8 bytes or fewer starting with another digit prints like an
        // integer: both are the same key string, and the parse gives the integer).
        Arbitrary<ChunkHash> digests = Arbitraries.bytes().array(byte[].class).ofMinSize(9).ofMaxSize(32).map(ChunkHash::of);
        Arbitrary<ChunkHash> shortDigests = Arbitraries.bytes().array(byte[].class).ofMinSize(1).ofMaxSize(8)
                .map(b -> ChunkHash.of(b)).filter(h -> h.toHex().charAt(0) == '0');
        Arbitrary<ChunkHash> hashes = Arbitraries.oneOf(Arbitraries.longs().map(ChunkHash::ofLong), digests, shortDigests);
        Arbitrary<CacheEngineKey> chunks = Combinators.combine(names, Arbitraries.integers().between(1, 16), hashes,
                Arbitraries.of(DType.class), tags)
                .as((n, ws, h, d, t) -> new CacheEngineKey(n, ws, ws - 1, h, d, t));
        return Arbitraries.oneOf(chunks.map(k -> (CacheKey) k),
                Combinators.combine(chunks, Arbitraries.integers().between(0, 200)).as((k, l) -> (CacheKey) k.layer(l)));
    }
}
