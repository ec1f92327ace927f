package lmcache4j.server.mp.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.stream.Stream;

import lmcache4j.engine.json.Json;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The MP codecs against frames LMCache's own classes produced with the real msgspec 0.22.0
 * ({@code golden/mp/mp-frames.json}, written by {@code generate-mp-frames.py} beside it). Every
 * request is parsed and its arguments decoded to the values the generator describes, then
 * re-encoded to the same bytes; every reply the server can send is encoded byte for byte.
 */
class GoldenMpFramesTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final byte[] IDENTITY = {0, 1, 2, 3, 4};

    @SuppressWarnings("unchecked")
    static Map<String, Object> golden() throws IOException {
        try (InputStream in = GoldenMpFramesTest.class.getResourceAsStream("/golden/mp/mp-frames.json")) {
            assertTrue(in != null, "golden/mp/mp-frames.json is on the test classpath");
            return (Map<String, Object>) Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> section(String name) throws IOException {
        return (List<Map<String, Object>>) golden().get(name);
    }

    @Test
    void goldenFileNamesThePinAndTheRealMsgspec() throws IOException {
        Map<String, Object> g = golden();
        assertEquals("0be164ed091d95c19a6a1f37005609d33dae7efe", g.get("wire_pin"));
        assertEquals("0.22.0", g.get("msgspec"));
    }

    @Test
    void everyFrozenIdAndNameDecodesToItsOperation() throws Exception {
        List<Map<String, Object>> ops = section("ops");
        int frozen = 0;
        for (Map<String, Object> op : ops) {
            MpOperation decoded = MpOperation.decode(HEX.parseHex((String) op.get("hex")));
            String name = (String) op.get("name");
            assertEquals(MpOperation.byName(name).orElseThrow(), decoded, name);
            if (op.get("id") != null) {
                frozen++;
                assertEquals(((Long) op.get("id")).intValue(), decoded.id(), name);
                assertEquals(name, decoded.wireName());
            }
        }
        assertEquals(34, frozen, "LMCache's frozen table has 34 ids");
        assertEquals(34, MpOperation.values().length);
    }

    @TestFactory
    Stream<DynamicTest> everyRequestParsesDecodesAndReencodes() throws IOException {
        return section("requests").stream().map(v -> DynamicTest.dynamicTest((String) v.get("name"), () -> {
            @SuppressWarnings("unchecked")
            List<String> hex = (List<String>) v.get("frames");
            List<byte[]> frames = new ArrayList<>();
            frames.add(IDENTITY);
            hex.forEach(h -> frames.add(HEX.parseHex(h)));
            MpRequest request = MpFrames.parse(frames);
            assertEquals(v.get("op"), request.operation().wireName());
            assertTrue(request.operation().served());
            @SuppressWarnings("unchecked")
            List<Object> args = (List<Object>) v.get("args");
            assertEquals(args.size(), request.args().size());
            for (int i = 0; i < args.size(); i++) {
                checkArgument(request.operation(), i, args.get(i), request.arg(i));
            }
            List<byte[]> reply = MpFrames.reply(request, MpScalars.encodeBool(true));
            assertArrayEquals(frames.get(1), reply.get(1), "the uid frame is echoed");
            assertArrayEquals(frames.get(2), reply.get(2), "the op frame is echoed");
        }));
    }

    @SuppressWarnings("unchecked")
    private static void checkArgument(MpOperation op, int index, Object expected, byte[] frame) throws Exception {
        String what = op.wireName() + " argument " + index;
        if (op == MpOperation.REPORT_BLOCK_ALLOCATION && index == 2) {
            MpScalars.checkWellFormed(frame, what); // accepted and ignored
        } else if (expected instanceof Map<?, ?> m && m.containsKey("token_ids")) {
            Map<String, Object> fields = (Map<String, Object>) m;
            IpcCacheServerKey key = expectedKey(fields);
            assertEquals(key, MpKeyCodec.decode(frame, MpKeyCodec.DEFAULT_MAX_TOKENS), what);
            assertEquals(HEX.formatHex(frame), HEX.formatHex(MpKeyCodec.encode(key, schema(fields))), what);
        } else if (expected instanceof Map<?, ?> m && m.containsKey("dtype_str")) {
            Map<String, Object> fields = (Map<String, Object>) m;
            RegisterEngineDrivenContextPayload payload = expectedPayload(fields);
            RegisterEngineDrivenContextPayload decoded = MpRegistrationCodec.decodePayload(frame);
            assertEquals(payload, decoded, what);
            if (payload.multiGroupFields().isEmpty()) {
                assertTrue(decoded.refusal().isEmpty());
                assertEquals(HEX.formatHex(frame), HEX.formatHex(MpRegistrationCodec.encodePayload(payload, schema(fields))));
            } else {
                assertTrue(decoded.refusal().orElseThrow().contains(payload.multiGroupFields().getFirst()));
            }
        } else if (expected instanceof Map<?, ?> m && m.containsKey("float")) {
            assertEquals((Double) m.get("float"), MpScalars.decodeNumber(frame, what));
            assertArrayEquals(frame, MpScalars.encodeFloat((Double) m.get("float")));
        } else if (expected instanceof Map<?, ?> m && m.containsKey("bytes")) {
            assertArrayEquals(HEX.parseHex((String) m.get("bytes")), MpScalars.decodeBytes(frame, what, 1 << 20));
        } else if (expected instanceof Long l) {
            if (op == MpOperation.WAIT_PREFETCH_STATUS) {
                assertEquals(l.doubleValue(), MpScalars.decodeNumber(frame, what));
            } else {
                assertEquals(l.longValue(), MpScalars.decodeInt(frame, what, Long.MIN_VALUE, Long.MAX_VALUE));
                assertEquals(OptionalLong.of(l), MpScalars.decodeOptionalInt(frame, what, 0, Long.MAX_VALUE));
            }
            assertArrayEquals(frame, MpScalars.encodeInt(l));
        } else if (expected instanceof String s) {
            assertEquals(s, MpScalars.decodeString(frame, what, MpKeyCodec.MAX_STRING_BYTES));
            assertArrayEquals(frame, MpScalars.encodeString(s));
        } else if (expected instanceof Boolean b) {
            assertEquals(b, MpScalars.decodeBool(frame, what));
            assertArrayEquals(frame, MpScalars.encodeBool(b));
        } else if (expected == null) {
            assertEquals(OptionalLong.empty(), MpScalars.decodeOptionalInt(frame, what, 0, Long.MAX_VALUE));
            assertArrayEquals(frame, MpScalars.encodeNil());
        } else {
            throw new AssertionError("the test cannot check " + what + ": " + expected);
        }
    }

    private static MpSchema schema(Map<String, Object> fields) {
        return MpSchema.valueOf((String) fields.get("schema"));
    }

    @SuppressWarnings("unchecked")
    private static IpcCacheServerKey expectedKey(Map<String, Object> f) {
        List<Long> tokens = (List<Long>) f.get("token_ids");
        int[] ids = new int[tokens.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = MpTokenHasher.checkToken(tokens.get(i));
        }
        Long worker = (Long) f.get("worker_id");
        return new IpcCacheServerKey((String) f.get("model_name"), ((Long) f.get("world_size")).intValue(),
                worker == null ? OptionalInt.empty() : OptionalInt.of(worker.intValue()), ids,
                ((Long) f.get("start")).intValue(), ((Long) f.get("end")).intValue(), (String) f.get("request_id"),
                (String) f.get("cache_salt"), ((Long) f.get("num_kv_readers")).intValue());
    }

    @SuppressWarnings("unchecked")
    private static RegisterEngineDrivenContextPayload expectedPayload(Map<String, Object> f) {
        Long slots = (Long) f.get("num_physical_slots");
        return new RegisterEngineDrivenContextPayload((Long) f.get("instance_id"), (String) f.get("model_name"),
                ((Long) f.get("world_size")).intValue(), ((Long) f.get("block_size")).intValue(),
                ((Long) f.get("num_layers")).intValue(), (Long) f.get("hidden_dim_size"), (String) f.get("dtype_str"),
                (Boolean) f.get("use_mla"), slots == null ? OptionalLong.empty() : OptionalLong.of(slots),
                (List<String>) f.get("multi_group_fields"));
    }

    @TestFactory
    Stream<DynamicTest> keysLmcacheRefusesAreRefused() throws IOException {
        return section("invalid_keys").stream().map(v -> DynamicTest.dynamicTest((String) v.get("name"), () -> {
            MpProtocolException e = assertThrows(MpProtocolException.class,
                    () -> MpKeyCodec.decode(HEX.parseHex((String) v.get("hex")), MpKeyCodec.DEFAULT_MAX_TOKENS));
            assertEquals(MpDropReason.BAD_ARGUMENT, e.reason());
        }));
    }

    @TestFactory
    Stream<DynamicTest> everyReplyEncodesByteForByte() throws IOException {
        return section("replies").stream().map(v -> DynamicTest.dynamicTest((String) v.get("name"), () -> {
            byte[] golden = HEX.parseHex((String) v.get("hex"));
            @SuppressWarnings("unchecked")
            Map<String, Object> result = (Map<String, Object>) v.get("result");
            Map.Entry<String, Object> only = result.entrySet().iterator().next();
            byte[] encoded = switch (only.getKey()) {
                case "int" -> MpScalars.encodeInt((Long) only.getValue());
                case "bool" -> MpScalars.encodeBool((Boolean) only.getValue());
                case "str" -> MpScalars.encodeString((String) only.getValue());
                case "RegisterEngineDrivenContextResponse" -> {
                    RegisterEngineDrivenContextResponse r = registerResponse(only.getValue());
                    assertEquals(r, MpRegistrationCodec.decodeResponse(golden));
                    yield MpRegistrationCodec.encodeResponse(r);
                }
                case "PrepareStoreResponse" -> {
                    PrepareStoreResponse r = new PrepareStoreResponse(context(field(only.getValue(), "context")));
                    assertEquals(r, MpTransferCodec.decodeStore(golden));
                    yield MpTransferCodec.encode(r);
                }
                case "PrepareRetrieveResponse" -> {
                    PrepareRetrieveResponse r = new PrepareRetrieveResponse(
                            (Boolean) field(only.getValue(), "success"), context(field(only.getValue(), "context")));
                    assertEquals(r, MpTransferCodec.decodeRetrieve(golden));
                    yield MpTransferCodec.encode(r);
                }
                default -> throw new AssertionError("unknown result type " + only.getKey());
            };
            assertEquals(HEX.formatHex(golden), HEX.formatHex(encoded));
        }));
    }

    @SuppressWarnings("unchecked")
    private static Object field(Object map, String name) {
        return ((Map<String, Object>) map).get(name);
    }

    private static RegisterEngineDrivenContextResponse registerResponse(Object f) {
        return new RegisterEngineDrivenContextResponse((String) field(f, "shm_name"), (Long) field(f, "pool_size"),
                (Long) field(f, "scratch_offset"), (Long) field(f, "scratch_size"),
                Optional.ofNullable((String) field(f, "error")));
    }

    @SuppressWarnings("unchecked")
    private static TransferContext context(Object ctx) {
        Map<String, Object> m = (Map<String, Object>) ctx;
        Optional<List<ShmSlot>> slots = Optional.ofNullable((List<Object>) m.get("slots")).map(list -> list.stream()
                .map(s -> new ShmSlot((Long) field(s, "offset"), (Long) field(s, "length"),
                        (List<Long>) field(s, "shape"), (String) field(s, "dtype")))
                .toList());
        Optional<List<Integer>> indices = Optional.ofNullable((List<Long>) m.get("chunk_indices"))
                .map(list -> list.stream().map(Long::intValue).toList());
        return new TransferContext(slots, indices);
    }

    @Test
    void aRefusedOperationParsesWithoutLookingAtItsArguments() throws Exception {
        byte[] garbage = {(byte) 0xc1};
        MpRequest r = MpFrames.parse(List.of(IDENTITY, new byte[] {0}, new byte[] {0x06}, garbage));
        assertEquals(MpOperation.STORE, r.operation());
        assertFalse(r.operation().served());
    }
}
