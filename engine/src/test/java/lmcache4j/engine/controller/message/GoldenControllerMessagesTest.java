package lmcache4j.engine.controller.message;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import lmcache4j.engine.json.Json;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The codec against LMCache's own encodings: {@code golden/controller/controller-messages.json},
 * generated from LMCache's {@code message.py} (see that folder's README). Each vector is checked
 * both ways: its bytes decode to the record its {@code fields} describe, and that record encodes
 * to its bytes. The records are built from {@code fields} by reflection over the record
 * components (camelCase component = snake_case field), independently of the codec's own tables.
 */
class GoldenControllerMessagesTest {
    private static final HexFormat HEX = HexFormat.of();

    /**
     * Vectors whose keys LMCache sent as negative Python ints (CPython's signed {@code hash()}).
     * lmcache4j keys are unsigned folds of a digest and are always written as unsigned integers,
     * so these re-encode to the same message with the key's other msgpack form, not the same bytes.
     */
    private static final Set<String> SIGNED_KEY_VECTORS = Set.of("KVEvictMsg.negative_key",
            "BatchedKVOperationMsg.admit_and_evict", "FullSyncBatchMsg", "BatchedP2PLookupMsg");

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> vectors() throws IOException {
        try (InputStream in = GoldenControllerMessagesTest.class
                .getResourceAsStream("/golden/controller/controller-messages.json")) {
            assertTrue(in != null, "golden/controller/controller-messages.json is on the test classpath");
            return (List<Map<String, Object>>) Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    @TestFactory
    Stream<DynamicTest> everyVectorDecodesToItsFieldsAndEncodesToItsBytes() throws IOException {
        return vectors().stream().map(v -> DynamicTest.dynamicTest((String) v.get("name"), () -> {
            String name = (String) v.get("name");
            byte[] wire = HEX.parseHex((String) v.get("hex"));
            ControllerMessage expected = build((String) v.get("type"), (Map<String, Object>) v.get("fields"));

            ControllerMessage decoded = ControllerCodec.decode(wire);
            assertEquals(expected, decoded, name + ": decoded bytes");

            byte[] encoded = ControllerCodec.encode(expected);
            if (SIGNED_KEY_VECTORS.contains(name)) {
                assertEquals(expected, ControllerCodec.decode(encoded), name + ": re-encoded with unsigned keys");
                assertTrue(encoded.length >= wire.length, name + ": unsigned keys are never shorter");
            } else {
                assertEquals(HEX.formatHex(wire), HEX.formatHex(encoded), name + ": encoded bytes");
            }
        }));
    }

    @Test
    void everyMessageTypeOfTheCodecHasAGoldenVectorAndViceVersa() throws IOException {
        Set<String> golden = new TreeSet<>();
        for (Map<String, Object> v : vectors()) {
            golden.add((String) v.get("type"));
        }
        assertEquals(new TreeSet<>(ControllerCodec.messageTypes()), golden);
        assertEquals(51, golden.size(), "LMCache's Msg union has 51 classes (ErrorMsg included)");
    }

    @Test
    void theSignedKeyVectorsReallyHoldSignedKeys() throws Exception {
        for (Map<String, Object> v : vectors()) {
            if (SIGNED_KEY_VECTORS.contains(v.get("name"))) {
                byte[] wire = HEX.parseHex((String) v.get("hex"));
                byte[] encoded = ControllerCodec.encode(ControllerCodec.decode(wire));
                assertTrue(!HEX.formatHex(wire).equals(HEX.formatHex(encoded)), v.get("name") + " differs only by key forms");
            }
        }
    }

    /**
     * The 64 bits of a JSON integer: the vectors carry keys >= 2^63 as the unsigned numbers LMCache
     * writes (Json reads those as BigInteger), and a record holds them in a long's bits.
     */
    private static long bits(Object json) {
        if (json instanceof BigInteger unsigned) {
            assertTrue(unsigned.signum() >= 0 && unsigned.bitLength() == 64, "an unsigned 64-bit key: " + unsigned);
            return unsigned.longValue();
        }
        return (Long) json;
    }

    // ---- building records from the vectors' fields, by reflection ----

    private static final Map<String, Class<?>> RECORDS = new HashMap<>();

    static {
        collect(ControllerMessage.class);
    }

    private static void collect(Class<?> sealed) {
        for (Class<?> c : sealed.getPermittedSubclasses()) {
            if (c.isRecord()) {
                RECORDS.put(c.getSimpleName(), c);
            } else {
                collect(c);
            }
        }
    }

    static ControllerMessage build(String type, Map<String, Object> fields) throws Exception {
        Class<?> record = RECORDS.get(type);
        assertTrue(record != null, "a record named " + type);
        return (ControllerMessage) fromMap(record, fields);
    }

    private static String snake(String camel) {
        StringBuilder b = new StringBuilder();
        for (char c : camel.toCharArray()) {
            if (Character.isUpperCase(c)) {
                b.append('_').append(Character.toLowerCase(c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    private static Object fromMap(Class<?> record, Map<String, Object> fields) throws Exception {
        RecordComponent[] components = record.getRecordComponents();
        assertEquals(components.length, fields.size(), record.getSimpleName() + " fields " + fields.keySet());
        Object[] args = new Object[components.length];
        Class<?>[] types = new Class<?>[components.length];
        for (int i = 0; i < components.length; i++) {
            String name = snake(components[i].getName());
            assertTrue(fields.containsKey(name), record.getSimpleName() + " has field " + name + ": " + fields.keySet());
            args[i] = convert(fields.get(name), components[i].getGenericType());
            types[i] = components[i].getType();
        }
        return construct(record, types, args);
    }

    private static Object fromTuple(Class<?> record, List<Object> values) throws Exception {
        RecordComponent[] components = record.getRecordComponents();
        assertEquals(components.length, values.size());
        Object[] args = new Object[components.length];
        Class<?>[] types = new Class<?>[components.length];
        for (int i = 0; i < components.length; i++) {
            args[i] = convert(values.get(i), components[i].getGenericType());
            types[i] = components[i].getType();
        }
        return construct(record, types, args);
    }

    private static Object construct(Class<?> record, Class<?>[] types, Object[] args) throws Exception {
        Constructor<?> c = record.getDeclaredConstructor(types);
        return c.newInstance(args);
    }

    @SuppressWarnings("unchecked")
    private static Object convert(Object json, Type type) throws Exception {
        if (type instanceof ParameterizedType p) {
            Class<?> raw = (Class<?>) p.getRawType();
            Type[] a = p.getActualTypeArguments();
            if (raw == Optional.class) {
                return json == null ? Optional.empty() : Optional.of(convert(json, a[0]));
            }
            if (raw == List.class) {
                List<Object> out = new ArrayList<>();
                for (Object x : (List<Object>) json) {
                    out.add(convert(x, a[0]));
                }
                return out;
            }
            if (raw == Map.class) {
                Map<Object, Object> out = new LinkedHashMap<>();
                for (Map.Entry<String, Object> e : ((Map<String, Object>) json).entrySet()) {
                    Object key = a[0] == Integer.class ? (Object) Integer.parseInt(e.getKey()) : e.getKey();
                    out.put(key, a[1] == Object.class ? e.getValue() : convert(e.getValue(), a[1]));
                }
                return out;
            }
            throw new AssertionError("no conversion to " + type);
        }
        Class<?> c = (Class<?>) type;
        if (c == String.class) {
            return (String) json;
        }
        if (c == int.class || c == Integer.class) {
            return Math.toIntExact((Long) json);
        }
        if (c == long.class) {
            return bits(json);
        }
        if (c == boolean.class || c == Boolean.class) {
            return (Boolean) json;
        }
        if (c == double.class) {
            return ((Number) json).doubleValue();
        }
        if (c == int[].class) {
            return ((List<Object>) json).stream().mapToInt(x -> Math.toIntExact((Long) x)).toArray();
        }
        if (c == long[].class) {
            return ((List<Object>) json).stream().mapToLong(GoldenControllerMessagesTest::bits).toArray();
        }
        if (c == OpType.class) {
            return Stream.of(OpType.values()).filter(t -> t.wireValue().equals(json)).findFirst().orElseThrow();
        }
        if (c == HeartbeatCommand.class) {
            Map<String, Object> m = new LinkedHashMap<>((Map<String, Object>) json);
            String tag = (String) m.remove("command_type");
            Optional<String> reason = Optional.ofNullable((String) m.get("reason"));
            Optional<Map<String, Object>> args = Optional.ofNullable((Map<String, Object>) m.get("args"));
            return tag.equals("full_sync") ? new HeartbeatCommand.FullSyncCommand(reason, args)
                    : new HeartbeatCommand.OtherCommand(tag, reason, args);
        }
        if (c.isRecord()) {
            return json instanceof List<?> l ? fromTuple(c, (List<Object>) l) : fromMap(c, (Map<String, Object>) json);
        }
        throw new AssertionError("no conversion to " + c);
    }
}
