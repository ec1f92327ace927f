package lmcache4j.engine.config;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

import lmcache4j.engine.config.internal.ConfigSchema;

/**
 * Loads an {@link LMCacheEngineConfig} the way LMCache does (spec §6.8): a YAML file (passed in, or
 * named by {@code LMCACHE_CONFIG_FILE}), overridden by {@code LMCACHE_<FIELD>} environment
 * variables, overridden by code; then defaults and the derived rules.
 *
 * <pre>{@code
 * LMCacheEngineConfig c = ConfigLoader.load();                       // file from LMCACHE_CONFIG_FILE, env
 * LMCacheEngineConfig c = ConfigLoader.builder()
 *         .file(Path.of("lmcache.yaml"))
 *         .environment(Map.of("LMCACHE_CHUNK_SIZE", "512"))
 *         .set("local_cpu", false)
 *         .build();
 * }</pre>
 *
 * <p>Unknown keys fail in the file and in code (they are lmcache4j's own), and warn in the
 * environment (shared with other tools); LMCache keys lmcache4j does not implement fail everywhere
 * with "not supported by lmcache4j", since a user who set them expects a feature that is not here.
 */
public final class ConfigLoader {
    /** The environment variable naming the YAML config file. */
    public static final String CONFIG_FILE_VAR = ConfigResolver.CONFIG_FILE_VAR;

    private static final System.Logger LOG = System.getLogger(ConfigLoader.class.getName());

    private ConfigLoader() {
    }

    /**
     * File from {@code LMCACHE_CONFIG_FILE} if set, then the process environment.
     *
     * @throws ConfigException listing every problem
     */
    public static LMCacheEngineConfig load() {
        return builder().build();
    }

    /**
     * {@code yaml}, then the process environment.
     *
     * @throws ConfigException listing every problem
     */
    public static LMCacheEngineConfig load(Path yaml) {
        return builder().file(yaml).build();
    }

    /** A loader reading the process environment, with no overrides yet. */
    public static Builder builder() {
        return new Builder();
    }

    /** Chooses the sources and code overrides; {@link #build()} does the loading. */
    public static final class Builder {
        private ConfigSchema schema = ConfigSchema.lmcache4j();
        private Map<String, String> env = System.getenv();
        private Path file;
        private final Map<String, ConfigResolver.Entry> overrides = new LinkedHashMap<>();
        private Consumer<String> warningSink = w -> LOG.log(System.Logger.Level.WARNING, w);

        private Builder() {
        }

        /** The environment to read instead of {@link System#getenv()} (tests, embedding). */
        public Builder environment(Map<String, String> environment) {
            this.env = Map.copyOf(environment);
            return this;
        }

        /** Reads this YAML file; takes precedence over {@code LMCACHE_CONFIG_FILE}. */
        public Builder file(Path yaml) {
            this.file = Objects.requireNonNull(yaml, "yaml");
            return this;
        }

        /**
         * Overrides {@code key} in code, above file and environment. {@code value} is a Java value
         * of the field's type ({@code Integer}, {@code Boolean}, {@code Double}, {@code String},
         * {@code List}, {@code Map}), text converted as in the environment, or
         * {@link Optional#empty()} to unset a nullable field. Setting the same key again replaces it.
         */
        public Builder set(String key, Object value) {
            Objects.requireNonNull(value, "value (use Optional.empty() to unset)");
            return put(key, value, false, "code");
        }

        /**
         * Overrides {@code key} with text converted exactly as an {@code LMCACHE_*} variable is
         * (quotes stripped, comma lists, JSON objects); {@code origin} names the source in the
         * report, for example {@code "--set"}.
         */
        public Builder setText(String key, String text, String origin) {
            return put(key, Objects.requireNonNull(text, "text"), true, origin);
        }

        private Builder put(String key, Object value, boolean text, String origin) {
            overrides.remove(key); // re-setting moves the key to the end: the latest override wins
            overrides.put(key, new ConfigResolver.Entry(key, value, text, new ConfigSource.Code(origin)));
            return this;
        }

        /** Where warnings (deprecated names, ignored variables, derived overrides) go; default: System.Logger. */
        public Builder warnings(Consumer<String> sink) {
            this.warningSink = Objects.requireNonNull(sink, "sink");
            return this;
        }

        Builder schema(ConfigSchema s) {
            this.schema = s;
            return this;
        }

        /** The file that will be read: {@link #file} if given, else {@code LMCACHE_CONFIG_FILE}. */
        public Optional<Path> configFile() {
            if (file != null) {
                return Optional.of(file);
            }
            String named = env.get(CONFIG_FILE_VAR);
            return named == null || named.isBlank() ? Optional.empty() : Optional.of(Path.of(named.strip()));
        }

        /**
         * Loads, merges and validates.
         *
         * @throws ConfigException listing every problem found
         */
        public LMCacheEngineConfig build() {
            ConfigResolver.Resolved r = resolve();
            return new LMCacheEngineConfig(schema, r.values(), r.sources(), r.warnings());
        }

        ConfigResolver.Resolved resolve() {
            ConfigResolver resolver = new ConfigResolver(schema);
            Optional<Path> path = configFile();
            if (path.isPresent()) {
                try {
                    resolver.applyFile(path.get(), YamlConfigFile.read(path.get()));
                } catch (ConfigException e) {
                    String how = file != null ? "" : " (named by " + CONFIG_FILE_VAR + ")";
                    e.problems().forEach(p -> resolver.problem(p + how));
                }
            }
            resolver.applyEnv(env);
            resolver.applyCode(new ArrayList<>(overrides.values()));
            try {
                return resolver.finish(env);
            } finally {
                // Warnings are worth seeing even when the config fails (a deprecated name, say).
                resolver.warnings().forEach(warningSink);
            }
        }
    }
}
