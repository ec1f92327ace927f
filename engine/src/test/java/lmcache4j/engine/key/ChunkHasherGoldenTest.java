package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import lmcache4j.engine.json.Json;

/**
 * lmcache4j's CBOR bytes and hashes against {@code golden/cbor-vectors.json}, written by an
 * independent CBOR implementation (npm {@code cbor}, canonical mode) and Node's SHA-256; see
 * {@code golden/README.md}.
 */
class ChunkHasherGoldenTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final Map<String, Object> VECTORS = load();

    @SuppressWarnings("unchecked")
    private static Map<String, Object> load() {
        try (InputStream in = ChunkHasherGoldenTest.class.getResourceAsStream("/golden/cbor-vectors.json")) {
            if (in == null) {
                throw new IllegalStateException("golden/cbor-vectors.json is not on the test class path");
            }
            return (Map<String, Object>) Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> cases(String section) {
        return (List<Map<String, Object>>) VECTORS.get(section);
    }

    @SuppressWarnings("unchecked")
    private static int[] ints(Object list) {
        return ((List<Long>) list).stream().mapToInt(Long::intValue).toArray();
    }

    @Test
    void theVectorsComeFromTheIndependentEncoderInCanonicalMode() {
        assertTrue(((String) VECTORS.get("cbor_library")).contains("encodeCanonical"), VECTORS.toString());
        assertFalse(cases("none_hash").isEmpty());
        assertFalse(cases("blocks").isEmpty());
        assertFalse(cases("chains").isEmpty());
    }

    @TestFactory
    Stream<DynamicTest> noneHashIsSha256OfTheSeedAsACborTextString() {
        return cases("none_hash").stream().map(c -> DynamicTest.dynamicTest("seed '" + c.get("seed") + "'", () -> {
            String seed = (String) c.get("seed");
            CborEncoder cbor = new CborEncoder(8);
            cbor.writeText(seed);
            assertEquals(c.get("cbor_hex"), HEX.formatHex(cbor.toByteArray()));
            ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, seed);
            assertEquals(c.get("sha256_hex"), hasher.noneHash().toHex());
            assertEquals(seed, hasher.seed().orElseThrow());
        }));
    }

    @TestFactory
    Stream<DynamicTest> blockInputsEncodeAndHashAsTheIndependentImplementation() {
        return cases("blocks").stream().map(c -> DynamicTest.dynamicTest((String) c.get("name"), () -> {
            int[] tokens = ints(c.get("tokens"));
            String parentHex = (String) c.get("parent_hex");
            ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "unused");
            if (parentHex == null) {
                assertEquals(c.get("sha256_hex"), hasher.unchained(tokens, 0, tokens.length).toHex());
                return;
            }
            ChunkHash parent = ChunkHash.fromHex(parentHex);
            assertEquals(c.get("cbor_hex"), HEX.formatHex(hasher.cborInput(parent, tokens, 0, tokens.length)));
            assertEquals(c.get("sha256_hex"), hasher.next(parent, tokens, 0, tokens.length).toHex());
            // The same chunk inside a larger array hashes the same: from/to are honoured.
            int[] padded = new int[tokens.length + 6];
            Arrays.fill(padded, 99);
            System.arraycopy(tokens, 0, padded, 3, tokens.length);
            assertEquals(c.get("sha256_hex"), hasher.next(parent, padded, 3, 3 + tokens.length).toHex());
        }));
    }

    @TestFactory
    Stream<DynamicTest> nullParentBlocksEncodeCborNullFirst() {
        return cases("blocks").stream().filter(c -> c.get("parent_hex") == null)
                .map(c -> DynamicTest.dynamicTest((String) c.get("name"), () -> {
                    int[] tokens = ints(c.get("tokens"));
                    CborEncoder cbor = new CborEncoder(8);
                    cbor.arrayHead(3);
                    cbor.writeNull();
                    cbor.writeIntArray(tokens, 0, tokens.length);
                    cbor.writeNull();
                    assertEquals(c.get("cbor_hex"), HEX.formatHex(cbor.toByteArray()));
                }));
    }

    @TestFactory
    Stream<DynamicTest> arraysTooLongToStoreMatchInHeadLengthAndHash() {
        return cases("filled_blocks").stream().map(c -> DynamicTest.dynamicTest((String) c.get("name"), () -> {
            int[] tokens = new int[((Long) c.get("fill_count")).intValue()];
            Arrays.fill(tokens, ((Long) c.get("fill_value")).intValue());
            ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "unused");
            ChunkHash parent = ChunkHash.fromHex((String) c.get("parent_hex"));
            byte[] cbor = hasher.cborInput(parent, tokens, 0, tokens.length);
            String head = (String) c.get("cbor_head_hex");
            assertEquals(head, HEX.formatHex(cbor, 0, head.length() / 2));
            assertEquals(((Long) c.get("cbor_length")).intValue(), cbor.length);
            assertEquals(c.get("sha256_hex"), hasher.next(parent, tokens, 0, tokens.length).toHex());
        }));
    }

    @TestFactory
    @SuppressWarnings("unchecked")
    Stream<DynamicTest> prefixChainsFromASeedMatch() {
        return cases("chains").stream().map(c -> DynamicTest.dynamicTest((String) c.get("name"), () -> {
            ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, (String) c.get("seed"));
            assertEquals(c.get("none_hash_hex"), hasher.noneHash().toHex());
            int[] tokens = ints(c.get("tokens"));
            int chunkSize = ((Long) c.get("chunk_size")).intValue();
            boolean saveUnfull = (Boolean) c.get("save_unfull_chunk");
            List<Map<String, Object>> links = (List<Map<String, Object>>) c.get("links");

            List<String> expected = links.stream().map(l -> (String) l.get("hash_hex")).toList();
            assertEquals(expected, hasher.chain(tokens, chunkSize, saveUnfull).stream().map(ChunkHash::toHex).toList());

            // The chunked database gives the same hashes over the same ranges.
            ChunkedTokenDatabase db = new ChunkedTokenDatabase(chunkSize, saveUnfull, hasher,
                    new KeyFactory("m", 1, 0, lmcache4j.allocator.DType.BFLOAT16), StorageKeys.DIGEST);
            List<String> ranges = new ArrayList<>();
            for (HashRange r : db.hashTokens(tokens)) {
                ranges.add(r.start() + " " + r.end() + " " + r.hash().toHex());
            }
            List<String> expectedRanges = links.stream()
                    .map(l -> l.get("start") + " " + l.get("end") + " " + l.get("hash_hex")).toList();
            assertEquals(expectedRanges, ranges);
        }));
    }
}
