package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import lmcache4j.allocator.DType;
import org.junit.jupiter.api.Test;

class ChunkedTokenDatabaseTest {
    private static final ChunkHasher HASHER = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");
    private static final KeyFactory KEYS = new KeyFactory("meta-llama/Llama-3.1-8B", 2, 1, DType.BFLOAT16);
    private static final int[] TOKENS = IntStream.range(0, 10).map(i -> 1000 + i).toArray();

    private static ChunkedTokenDatabase db(int chunkSize, boolean saveUnfull) {
        return new ChunkedTokenDatabase(chunkSize, saveUnfull, HASHER, KEYS);
    }

    @Test
    void theDigestFormKeysChunksByVllmsDigestChain() {
        ChunkedTokenDatabase digest = new ChunkedTokenDatabase(4, true, HASHER, KEYS, StorageKeys.DIGEST);
        List<ChunkHash> chain = HASHER.chain(TOKENS, 4, true);
        List<ChunkRange> ranges = digest.processTokens(TOKENS);
        assertEquals(chain, ranges.stream().map(r -> r.key().chunkHash()).toList());
        assertEquals("meta-llama/Llama-3.1-8B@2@1@" + chain.getFirst().toHex() + "@bfloat16", ranges.getFirst().key().toKeyString());
        assertEquals(64, chain.getFirst().toHex().length());
        assertEquals(StorageKeys.LMCACHE, db(4, true).storageKeys(), "LMCache's current form is the default");
    }

    private static List<String> spans(List<? extends Record> ranges) {
        return ranges.stream().map(r -> switch (r) {
            case ChunkRange c -> c.start() + "-" + c.end();
            case HashRange h -> h.start() + "-" + h.end();
            default -> throw new AssertionError(r);
        }).toList();
    }

    private static boolean[] mask(int falses, int length) {
        boolean[] m = new boolean[length];
        for (int i = falses; i < length; i++) {
            m[i] = true;
        }
        return m;
    }

    @Test
    void chunksAreConsecutiveAndThePartialLastOneIsKeptOnlyWhenAsked() {
        assertEquals(List.of("0-4", "4-8", "8-10"), spans(db(4, true).processTokens(TOKENS)));
        assertEquals(List.of("0-4", "4-8"), spans(db(4, false).processTokens(TOKENS)));
        assertEquals(List.of("0-5", "5-10"), spans(db(5, false).processTokens(TOKENS)));
        assertEquals(List.of(), spans(db(256, false).processTokens(TOKENS)));
        assertEquals(List.of("0-10"), spans(db(256, true).processTokens(TOKENS)));
        assertEquals(List.of(), db(4, true).processTokens(new int[0]));
    }

    @Test
    void keysCarryTheChainHashAndTheEngineIdentity() {
        List<ChunkRange> ranges = db(4, true).processTokens(TOKENS);
        List<ChunkHash> chain = HASHER.intChain(TOKENS, 4, true);
        for (int i = 0; i < ranges.size(); i++) {
            CacheEngineKey key = ranges.get(i).key();
            assertEquals(new CacheEngineKey("meta-llama/Llama-3.1-8B", 2, 1, chain.get(i), DType.BFLOAT16), key);
            assertTrue(key.toKeyString().startsWith("meta-llama/Llama-3.1-8B@2@1@" + chain.get(i).toHex() + "@bfloat16"));
        }
    }

    @Test
    void maskedChunksAreSkippedButStillFeedTheChain() {
        ChunkedTokenDatabase db = db(4, true);
        List<ChunkRange> all = db.processTokens(TOKENS);
        List<ChunkRange> masked = db.processTokens(TOKENS, mask(4, 10));
        assertEquals(List.of("4-8", "8-10"), spans(masked));
        assertEquals(all.subList(1, 3), masked, "the later chunks keep the keys that chain through the skipped one");
        assertEquals(List.of("8-10"), spans(db.processTokens(TOKENS, mask(8, 10))));
        assertEquals(all, db.processTokens(TOKENS, mask(0, 10)));
        assertEquals(List.of(), db(5, true).processTokens(TOKENS, mask(10, 10)), "everything masked");
    }

    @Test
    void aMaskPrefixThatIsNotWholeChunksIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> db(4, true).processTokens(TOKENS, mask(3, 10)));
        assertEquals("the mask's 3 leading False entries are not a multiple of the chunk size 4; "
                + "only whole chunks can be skipped", e.getMessage());
    }

    @Test
    void aMaskOfTheWrongFormOrLengthIsRefused() {
        boolean[] holey = mask(4, 10);
        holey[6] = false;
        IllegalArgumentException form = assertThrows(IllegalArgumentException.class, () -> db(4, true).processTokens(TOKENS, holey));
        assertTrue(form.getMessage().contains("False...False then True...True") && form.getMessage().contains("entry 6"),
                form.getMessage());
        IllegalArgumentException length = assertThrows(IllegalArgumentException.class,
                () -> db(4, true).processTokens(TOKENS, mask(0, 9)));
        assertEquals("the mask has 9 entries but there are 10 tokens; it needs one entry per token", length.getMessage());
    }

    @Test
    void makeKeyFalseGivesTheRawHashes() {
        ChunkedTokenDatabase db = db(4, false);
        List<HashRange> hashes = db.hashTokens(TOKENS);
        assertEquals(HASHER.intChain(TOKENS, 4, false), hashes.stream().map(HashRange::hash).toList());
        assertEquals(spans(db.processTokens(TOKENS)), spans(hashes));
        assertEquals(List.of("4-8"), spans(db.hashTokens(TOKENS, mask(4, 10))));
    }

    @Test
    void requestTagsBecomeKeyTags() {
        Map<String, String> configs = new LinkedHashMap<>();
        configs.put("lmcache.tag.tenant", "acme");
        configs.put("lmcache.other", "not a tag");
        ChunkRange r = db(4, false).processTokens(TOKENS, mask(0, 10), configs).get(0);
        assertEquals(Map.of("tenant", "acme"), r.key().tags());
        assertTrue(r.key().toKeyString().endsWith("@bfloat16@tenant%acme"), r.key().toKeyString());
    }

    @Test
    void precomputedHashesGiveConsecutiveRangesOfTheGivenLengths() {
        List<ChunkHash> hashes = List.of(ChunkHash.fromHex("aa"), ChunkHash.fromHex("bb"), ChunkHash.fromHex("cc"));
        List<ChunkRange> ranges = db(4, false).processHashes(hashes, new int[] {256, 256, 17},
                Map.of("lmcache.tag.t", "1"));
        assertEquals(List.of("0-256", "256-512", "512-529"), spans(ranges));
        assertEquals(hashes, ranges.stream().map(r -> r.key().chunkHash()).toList());
        assertEquals(Map.of("t", "1"), ranges.get(2).key().tags());
        assertEquals(List.of(), db(4, false).processHashes(List.of(), new int[0]));
    }

    @Test
    void precomputedHashesMustMatchTheirLengths() {
        List<ChunkHash> two = List.of(ChunkHash.fromHex("aa"), ChunkHash.fromHex("bb"));
        IllegalArgumentException sizes = assertThrows(IllegalArgumentException.class,
                () -> db(4, false).processHashes(two, new int[] {4}));
        assertEquals("got 2 hashes but 1 lengths; each hash needs the token count of its range", sizes.getMessage());
        assertThrows(IllegalArgumentException.class, () -> db(4, false).processHashes(two, new int[] {4, -1}));
        assertThrows(IllegalArgumentException.class,
                () -> db(4, false).processHashes(two, new int[] {Integer.MAX_VALUE, 1}));
    }

    @Test
    void constructionChecksItsArguments() {
        assertThrows(IllegalArgumentException.class, () -> db(0, true));
        assertThrows(IllegalArgumentException.class, () -> new KeyFactory("m", 2, 2, DType.FLOAT16));
        assertThrows(IllegalArgumentException.class, () -> new KeyFactory("a@b", 1, 0, DType.FLOAT16));
        assertThrows(NullPointerException.class, () -> new ChunkedTokenDatabase(4, true, null, KEYS));
        assertEquals(4, db(4, true).chunkSize());
        assertTrue(db(4, true).saveUnfullChunk());
    }
}
