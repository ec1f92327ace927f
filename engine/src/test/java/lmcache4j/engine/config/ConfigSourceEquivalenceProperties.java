package lmcache4j.engine.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.snakeyaml.engine.v2.api.Dump;
import org.snakeyaml.engine.v2.api.DumpSettings;
import org.snakeyaml.engine.v2.schema.CoreSchema;

import lmcache4j.engine.config.internal.ConfigField;
import lmcache4j.engine.config.internal.FieldKind;
import lmcache4j.engine.json.Json;

/**
 * For random valid values, the three ways of giving them (a YAML file, {@code LMCACHE_*} text,
 * code overrides) yield the same typed config, each value attributed to its own source.
 */
class ConfigSourceEquivalenceProperties {
    /** One field's value as code would give it ({@link Optional#empty()} = unset). */
    record Setting(String field, Object value) {
    }

    @Property
    void yamlEnvAndCodeGiveTheSameConfig(@ForAll("settings") List<Setting> settings) throws IOException {
        Map<String, Object> yaml = new LinkedHashMap<>();
        Map<String, String> env = new HashMap<>();
        ConfigLoader.Builder code = ConfigLoader.builder().environment(Map.of()).warnings(w -> { });
        for (Setting s : settings) {
            yaml.put(s.field(), s.value() instanceof Optional<?> o ? o.orElse(null) : s.value());
            env.put(ConfigField.envVarOf(s.field()), envText(s.value()));
            code.set(s.field(), s.value());
        }
        Path file = Files.createTempFile("lmcache4j-prop", ".yaml");
        try {
            Files.writeString(file, new Dump(DumpSettings.builder().setSchema(new CoreSchema()).build()).dumpToString(yaml));
            LMCacheEngineConfig fromFile = ConfigLoader.builder().environment(Map.of()).warnings(w -> { }).file(file).build();
            LMCacheEngineConfig fromEnv = ConfigLoader.builder().environment(env).warnings(w -> { }).build();
            LMCacheEngineConfig fromCode = code.build();
            assertEquals(fromCode, fromFile, () -> "YAML:\n" + yaml);
            assertEquals(fromCode, fromEnv, () -> "env: " + env);
            for (Setting s : settings) {
                if (fromCode.source(s.field()) instanceof ConfigSource.Derived) {
                    continue;
                }
                assertEquals(new ConfigSource.File(file), fromFile.source(s.field()));
                assertEquals(new ConfigSource.Env(ConfigField.envVarOf(s.field())), fromEnv.source(s.field()));
                assertEquals(new ConfigSource.Code("code"), fromCode.source(s.field()));
            }
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** The value written as an LMCACHE_* variable would be. */
    private static String envText(Object v) {
        return switch (v) {
            case Optional<?> o when o.isEmpty() -> "";
            case Boolean b -> b ? "True" : "0";
            case String s -> "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
            case List<?> l -> l.stream().map(String::valueOf).collect(Collectors.joining(","));
            case Map<?, ?> m -> Json.write(m);
            default -> String.valueOf(v);
        };
    }

    @Provide
    Arbitrary<List<Setting>> settings() {
        Arbitrary<String> ident = Arbitraries.strings().withCharRange('a', 'z').withCharRange('A', 'Z').ofMinLength(1).ofMaxLength(10);
        Arbitrary<Optional<Object>> unset = Arbitraries.just(Optional.empty());
        List<Arbitrary<Setting>> fields = List.of(
                setting("chunk_size", Arbitraries.integers().between(1, 1 << 20)),
                setting("local_cpu", Arbitraries.of(true, false)),
                setting("max_local_cpu_size", Arbitraries.doubles().between(0, 4096).ofScale(3)),
                setting("reserve_local_cpu_size", Arbitraries.doubles().between(0, 1e-3).ofScale(6)),
                setting("local_disk", Arbitraries.oneOf(unset, ident.map(s -> "/mnt/" + s + "/"),
                        ident.map(s -> "file:///data/" + s))),
                setting("max_local_disk_size", Arbitraries.doubles().between(0, 1e6)),
                setting("remote_url", Arbitraries.oneOf(unset,
                        Arbitraries.integers().between(1, 65535).map(p -> "redis://cache:" + p))),
                setting("remote_serde", mixedCase(Arbitraries.of("naive", "lz4", "zstd"))),
                setting("cache_policy", mixedCase(Arbitraries.of("LRU", "LFU", "FIFO", "MRU"))),
                setting("numa_mode", Arbitraries.oneOf(unset, Arbitraries.of("auto", "AUTO"))),
                setting("pre_caching_hash_algorithm", Arbitraries.of("sha256_cbor", "sha256_cbor_64bit")),
                setting("hash_seed", Arbitraries.oneOf(unset, Arbitraries.strings().numeric().ofMinLength(1).ofMaxLength(6), ident)),
                setting("enable_blending", Arbitraries.of(true, false)),
                setting("save_unfull_chunk", Arbitraries.of(true, false)),
                setting("blend_special_str", Arbitraries.strings().withCharRange(' ', '~').ofMaxLength(8)),
                setting("blend_check_layers", Arbitraries.integers().between(0, 200).list().ofMaxSize(4)),
                setting("blend_thresholds", Arbitraries.doubles().between(-10, 10).list().ofMaxSize(4)),
                setting("retrieve_locations", ident.list().ofMaxSize(3)),
                setting("store_location", Arbitraries.oneOf(unset, ident)),
                setting("lazy_memory_initial_ratio", Arbitraries.doubles().between(0.001, 1.0).ofScale(3)),
                setting("internal_api_server_port_start", Arbitraries.integers().between(1, 65535)),
                setting("extra_config", extraConfig(ident)));
        return Combinators.combine(fields.stream().map(a -> a.injectNull(0.4)).toList())
                .as(list -> list.stream().filter(java.util.Objects::nonNull).toList());
    }

    private static Arbitrary<Map<String, Object>> extraConfig(Arbitrary<String> ident) {
        Arbitrary<Object> leaf = Arbitraries.oneOf(
                Arbitraries.longs().between(-1_000_000, 1_000_000).map(Object.class::cast),
                Arbitraries.doubles().between(-1e6, 1e6).map(Object.class::cast),
                Arbitraries.of(true, false).map(Object.class::cast),
                ident.map(Object.class::cast));
        Arbitrary<Object> value = Arbitraries.oneOf(leaf, leaf.list().ofMaxSize(3).map(Object.class::cast));
        return Arbitraries.maps(ident.map(k -> "k_" + k), value).ofMaxSize(4);
    }

    private static Arbitrary<String> mixedCase(Arbitrary<String> words) {
        return Combinators.combine(words, Arbitraries.of(true, false))
                .as((w, lower) -> lower ? w.toLowerCase(Locale.ROOT) : w.toUpperCase(Locale.ROOT));
    }

    private static Arbitrary<Setting> setting(String field, Arbitrary<?> values) {
        return values.map(v -> new Setting(field, v));
    }

    static {
        // The generators above cover every kind of field; keep it so when kinds are added.
        List<FieldKind> covered = new ArrayList<>(List.of(FieldKind.values()));
        covered.removeAll(List.of(FieldKind.INT, FieldKind.BOOL, FieldKind.DOUBLE, FieldKind.STRING, FieldKind.CHOICE,
                FieldKind.INT_LIST, FieldKind.DOUBLE_LIST, FieldKind.STRING_LIST, FieldKind.JSON_OBJECT));
        if (!covered.isEmpty()) {
            throw new AssertionError("field kinds without a generator: " + covered);
        }
    }
}
