package lmcache4j.engine.config;

import java.nio.file.Path;

/**
 * Where a config value came from. Precedence, lowest first: {@link Default}, {@link File},
 * {@link Env}, {@link Code}; {@link Derived} values are set by a rule after all sources were read
 * (for example {@code enable_blending=true} forcing {@code save_unfull_chunk=true}, as LMCache does).
 */
public sealed interface ConfigSource {
    /** A short human-readable form: {@code default}, {@code file /etc/lmcache.yaml}, ... */
    String describe();

    /** The field table's default. */
    record Default() implements ConfigSource {
        @Override
        public String describe() {
            return "default";
        }
    }

    /** The YAML config file. */
    record File(Path path) implements ConfigSource {
        @Override
        public String describe() {
            return "file " + path;
        }
    }

    /** An environment variable, named. */
    record Env(String variable) implements ConfigSource {
        @Override
        public String describe() {
            return "env " + variable;
        }
    }

    /**
     * A programmatic override; {@code origin} says which ({@code "code"} for
     * {@link ConfigLoader.Builder#set}, {@code "--set"} for the CLI).
     */
    record Code(String origin) implements ConfigSource {
        @Override
        public String describe() {
            return origin;
        }
    }

    /** Set by a rule over other fields; {@code reason} names the rule. */
    record Derived(String reason) implements ConfigSource {
        @Override
        public String describe() {
            return "derived: " + reason;
        }
    }
}
