package lmcache4j.tests.nativeimage;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.graalvm.collections.EconomicMap;

import jdk.graal.compiler.util.json.JsonParser;

/** A reachability-metadata.json read with GraalVM's JSON parser into plain maps, lists, strings, longs and booleans. */
final class MetadataFile {
    private MetadataFile() {
    }

    static Map<String, Object> read(Path file) throws IOException {
        try (Reader reader = Files.newBufferedReader(file)) {
            return asMap(toJava(new JsonParser(reader).parse()));
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> asMap(Object value) {
        return (Map<String, Object>) value;
    }

    @SuppressWarnings("unchecked")
    static List<Object> section(Map<String, Object> metadata, String name) {
        return (List<Object>) metadata.getOrDefault(name, List.of());
    }

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
            case List<?> list -> list.stream().map(MetadataFile::toJava).toList();
            case Integer i -> (long) i;
            default -> value;
        };
    }
}
