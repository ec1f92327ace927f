package lmcache4j.cuda.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.graalvm.collections.EconomicMap;
import org.junit.jupiter.api.Test;

import com.oracle.svm.configure.ConfigurationParserOption;
import com.oracle.svm.configure.config.ForeignConfiguration;

import jdk.graal.compiler.util.json.JsonParser;
import jdk.graal.compiler.util.json.JsonWriter;

import lmcache4j.cuda.internal.Downcalls.Downcall;

/**
 * The module's native-image metadata lists exactly the downcalls {@link Downcalls} links: what
 * GraalVM's own parser ({@code svm-configure}'s {@link ForeignConfiguration}, strict mode) reads
 * from the file is compared with the descriptors the bindings build, in both directions.
 */
class ForeignMetadataTest {
    static final String METADATA = "META-INF/native-image/io.lmcache4j/lmcache4j-cuda-bindings/reachability-metadata.json";

    @Test
    void allListsEveryDowncallConstant() throws IllegalAccessException {
        Set<Downcall> declared = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Field field : Downcalls.class.getDeclaredFields()) {
            if (field.getType() == Downcall.class && Modifier.isStatic(field.getModifiers())) {
                declared.add((Downcall) field.get(null));
            }
        }
        Set<Downcall> listed = Collections.newSetFromMap(new IdentityHashMap<>());
        listed.addAll(Downcalls.ALL);
        assertEquals(declared.size(), Downcalls.ALL.size(), "Downcalls.ALL names a constant twice");
        assertEquals(declared, listed, "Downcalls.ALL and the Downcall constants differ");
    }

    @Test
    void metadataListsEveryDowncallAndNothingElse() throws IOException {
        Map<Map<String, Object>, List<String>> expected = new LinkedHashMap<>();
        for (Downcall downcall : Downcalls.ALL) {
            expected.computeIfAbsent(entry(downcall), _ -> new ArrayList<>()).add(downcall.symbol());
        }
        List<Map<String, Object>> inFile = downcallsAsGraalVmReadsThem();

        Set<Map<String, Object>> missing = new LinkedHashSet<>(expected.keySet());
        inFile.forEach(missing::remove);
        Set<Map<String, Object>> stale = new LinkedHashSet<>(inFile);
        stale.removeAll(expected.keySet());
        if (!missing.isEmpty() || !stale.isEmpty()) {
            fail(METADATA + " is out of date with Downcalls.\nmissing (linked by the bindings): "
                    + missing.stream().map(e -> e + " for " + expected.get(e)).toList()
                    + "\nstale (linked by nothing): " + stale
                    + "\nThe foreign section it should have:\n" + foreignSection(expected.keySet()));
        }
        assertEquals(inFile.size(), new LinkedHashSet<>(inFile).size(), "an entry is listed twice");
    }

    /** The downcalls as the strict {@link ForeignConfiguration} parser understood them, written back out by it. */
    static List<Map<String, Object>> downcallsAsGraalVmReadsThem() throws IOException {
        ForeignConfiguration configuration = new ForeignConfiguration();
        try (InputStream in = Downcalls.class.getModule().getResourceAsStream(METADATA)) {
            assertTrue(in != null, METADATA + " is not in the module");
            Reader reader = new InputStreamReader(in, StandardCharsets.UTF_8);
            configuration.createParser(true, EnumSet.of(ConfigurationParserOption.STRICT_CONFIGURATION))
                    .parseAndRegister(reader);
        }
        StringWriter printed = new StringWriter();
        try (JsonWriter writer = new JsonWriter(printed)) {
            configuration.printJson(writer);
        }
        Object foreign = toJava(new JsonParser(printed.toString()).parse());
        List<Map<String, Object>> downcalls = new ArrayList<>();
        if (foreign instanceof Map<?, ?> map && map.get("downcalls") instanceof List<?> list) {
            list.forEach(downcall -> downcalls.add(asMap(downcall)));
        }
        return downcalls;
    }

    /** A downcall as one entry of the metadata's {@code downcalls} array. */
    static Map<String, Object> entry(Downcall downcall) {
        Map<String, Object> entry = new TreeMap<>();
        entry.put("returnType", LayoutNames.returnType(downcall.descriptor()));
        entry.put("parameterTypes", LayoutNames.parameterTypes(downcall.descriptor()));
        Map<String, Object> options = new TreeMap<>();
        downcall.firstVariadicArg().ifPresent(index -> options.put("firstVariadicArg", (long) index));
        if (downcall.capturesErrno()) {
            options.put("captureCallState", true);
        }
        if (downcall.critical()) {
            options.put("critical", new TreeMap<>(Map.of("allowHeapAccess", false)));
        }
        if (!options.isEmpty()) {
            entry.put("options", options);
        }
        return entry;
    }

    private static String foreignSection(Set<Map<String, Object>> entries) {
        return entries.stream().map(ForeignMetadataTest::json).collect(Collectors.joining(",\n      ",
                "  \"foreign\": {\n    \"downcalls\": [\n      ", "\n    ]\n  }"));
    }

    private static String json(Object value) {
        return switch (value) {
            case Map<?, ?> map -> map.entrySet().stream().map(e -> json(e.getKey()) + ": " + json(e.getValue()))
                    .collect(Collectors.joining(", ", "{", "}"));
            case List<?> list -> list.stream().map(ForeignMetadataTest::json).collect(Collectors.joining(", ", "[", "]"));
            case String s -> "\"" + s + "\"";
            default -> String.valueOf(value);
        };
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object value) {
        return (Map<String, Object>) value;
    }

    /** GraalVM's parser gives EconomicMaps, Integers and Longs; plain sorted maps and longs compare by value. */
    private static Object toJava(Object value) {
        return switch (value) {
            case EconomicMap<?, ?> map -> {
                Map<String, Object> result = new TreeMap<>();
                var cursor = map.getEntries();
                while (cursor.advance()) {
                    result.put((String) cursor.getKey(), toJava(cursor.getValue()));
                }
                yield result;
            }
            case List<?> list -> list.stream().map(ForeignMetadataTest::toJava).toList();
            case Integer i -> (long) i;
            default -> value;
        };
    }
}
