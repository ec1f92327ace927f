package lmcache4j.engine.config;

import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Shared helpers: loaders over a given environment, YAML files, expected failures. */
final class ConfigTestSupport {
    private ConfigTestSupport() {
    }

    /** A loader over exactly {@code env} (never the process environment), warnings collected into {@code sink}. */
    static ConfigLoader.Builder loader(Map<String, String> env, List<String> sink) {
        return ConfigLoader.builder().environment(env).warnings(sink::add);
    }

    static ConfigLoader.Builder loader(Map<String, String> env) {
        return loader(env, new ArrayList<>());
    }

    static LMCacheEngineConfig fromYaml(Path dir, String yaml) {
        return loader(Map.of()).file(write(dir, yaml)).build();
    }

    static LMCacheEngineConfig fromEnv(Map<String, String> env) {
        return loader(env).build();
    }

    static Path write(Path dir, String yaml) {
        try {
            Path p = Files.createTempFile(dir, "lmcache", ".yaml");
            Files.writeString(p, yaml);
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static ConfigException fails(ConfigLoader.Builder b) {
        return assertThrows(ConfigException.class, b::build);
    }
}
