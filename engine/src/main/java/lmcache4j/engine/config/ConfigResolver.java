package lmcache4j.engine.config;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import lmcache4j.engine.config.internal.BadValueException;
import lmcache4j.engine.config.internal.ConfigField;
import lmcache4j.engine.config.internal.ConfigSchema;
import lmcache4j.engine.config.internal.FieldKind;
import lmcache4j.engine.config.internal.ValueConverter;
import lmcache4j.engine.json.Json;

/**
 * Merges the config sources over a {@link ConfigSchema}: file, then environment, then code, each
 * overriding the one before; then defaults, the derived rules and cross-field checks. Collects
 * every problem instead of stopping at the first, so one run shows everything to fix.
 */
final class ConfigResolver {
    /** The YAML file selector (LMCache's name). */
    static final String CONFIG_FILE_VAR = "LMCACHE_CONFIG_FILE";
    /** Where vLLM takes its NONE_HASH seed from; lmcache4j's fallback for {@code hash_seed}. */
    static final String PYTHON_HASH_SEED_VAR = "PYTHONHASHSEED";
    private static final String ENV_PREFIX = "LMCACHE_";

    private final ConfigSchema schema;
    private final Map<String, Object> values = new LinkedHashMap<>();
    private final Map<String, ConfigSource> sources = new HashMap<>();
    private final List<String> problems = new ArrayList<>();
    private final List<String> warnings = new ArrayList<>();

    /** The outcome: every field's value ({@code null} = unset) and source, plus the warnings given. */
    record Resolved(Map<String, Object> values, Map<String, ConfigSource> sources, List<String> warnings) {
    }

    /** One raw entry of a source: a key as written, and either text or a native value. */
    record Entry(String key, Object raw, boolean text, ConfigSource source) {
    }

    ConfigResolver(ConfigSchema schema) {
        this.schema = schema;
    }

    /** Applies the YAML file's top-level entries. */
    void applyFile(Path path, Map<String, Object> yaml) {
        ConfigSource src = new ConfigSource.File(path);
        List<Entry> entries = new ArrayList<>();
        yaml.forEach((k, v) -> entries.add(new Entry(k, v, false, src)));
        applyLayer(entries);
    }

    /**
     * Applies {@code LMCACHE_<FIELD>} variables. Variables that are neither fields, aliases nor
     * known LMCache keys only warn: the environment is shared with other tools (and with Python
     * LMCache's own extras), unlike the file and code, which are lmcache4j's alone.
     */
    void applyEnv(Map<String, String> env) {
        List<Entry> entries = new ArrayList<>();
        for (Map.Entry<String, String> e : new TreeMap<>(env).entrySet()) {
            String var = e.getKey();
            if (!var.startsWith(ENV_PREFIX) || schema.nonFieldEnvVars().contains(var)) {
                continue;
            }
            String name = var.substring(ENV_PREFIX.length()).toLowerCase(Locale.ROOT);
            boolean exactSpelling = ConfigField.envVarOf(name).equals(var);
            boolean known = schema.field(name).isPresent() || schema.deprecatedAliases().containsKey(name)
                    || schema.unsupportedReason(name).isPresent();
            if (!exactSpelling || !known) {
                List<String> close = schema.suggest(name);
                warnings.add("ignoring environment variable " + var + ": it is not an lmcache4j config field"
                        + (close.isEmpty() ? "" : " (did you mean " + ConfigField.envVarOf(close.getFirst()) + "?)"));
                continue;
            }
            entries.add(new Entry(name, e.getValue(), true, new ConfigSource.Env(var)));
        }
        applyLayer(entries);
    }

    /** Applies programmatic overrides, in the order given. */
    void applyCode(List<Entry> overrides) {
        applyLayer(overrides);
    }

    private void applyLayer(List<Entry> entries) {
        Map<String, Entry> seen = new HashMap<>(); // canonical name -> entry that set it in this layer
        for (Entry e : entries) {
            String alias = null;
            String name = e.key();
            String target = schema.deprecatedAliases().get(name);
            if (target != null) {
                alias = name;
                name = target;
            }
            Entry earlier = seen.put(name, e);
            if (earlier != null && !earlier.key().equals(e.key())) {
                String old = alias != null ? e.key() : earlier.key();
                problems.add("both '" + old + "' and '" + name + "' are set (" + e.source().describe() + "); '" + old
                        + "' is LMCache's deprecated name for '" + name + "': keep only '" + name + "'");
                continue;
            }
            ConfigField field = schema.field(name).orElse(null);
            if (field == null) {
                rejectKey(e, alias, name);
                continue;
            }
            if (alias != null) {
                warnings.add("'" + alias + "' (" + e.source().describe() + ") is LMCache's deprecated name for '" + name
                        + "'; read as '" + name + "', rename it");
            }
            try {
                Object typed = e.text()
                        ? ValueConverter.fromText(field, ValueConverter.stripQuotes((String) e.raw()))
                        : ValueConverter.fromNative(field, e.raw());
                values.put(name, typed);
                sources.put(name, e.source());
            } catch (BadValueException bad) {
                problems.add(name + (alias != null ? " (given as '" + alias + "')" : "") + " = " + show(e)
                        + " (" + e.source().describe() + ") is not valid: " + bad.getMessage());
            }
        }
    }

    private void rejectKey(Entry e, String alias, String name) {
        String key = alias != null ? alias : name;
        String where = " (" + e.source().describe() + ")";
        String why = schema.unsupportedReason(name).orElse(null);
        if (why != null) {
            problems.add("'" + key + "'" + where + (alias != null ? ", LMCache's deprecated name for '" + name + "'," : "")
                    + " is not supported by lmcache4j: it configures " + why + "; remove it");
            return;
        }
        List<String> close = schema.suggest(key);
        problems.add("unknown config key '" + key + "'" + where
                + (close.isEmpty() ? "" : "; did you mean '" + close.getFirst() + "'?")
                + " Valid keys: " + String.join(", ", schema.fieldNames()));
    }

    /** The most characters of a value a problem repeats: a 100 kB value must not make a 100 kB message. */
    private static final int MAX_SHOWN_CHARS = 200;

    private static String show(Entry e) {
        String shown = e.text() ? Json.write(String.valueOf(e.raw())) : Json.write(e.raw());
        return shown.length() <= MAX_SHOWN_CHARS ? shown
                : shown.substring(0, MAX_SHOWN_CHARS) + "... (" + shown.length() + " characters)";
    }

    /**
     * Fills defaults, applies the {@code hash_seed} fallback and the derived rules, and runs the
     * cross-field checks.
     *
     * @throws ConfigException listing every problem found in any layer
     */
    Resolved finish(Map<String, String> env) {
        if (schema.field("hash_seed").isPresent() && values.get("hash_seed") == null) {
            String seed = env.get(PYTHON_HASH_SEED_VAR);
            if (seed != null) { // as vLLM: the value as written, even empty, is the seed
                values.put("hash_seed", seed);
                sources.put("hash_seed", new ConfigSource.Env(PYTHON_HASH_SEED_VAR));
            }
        }
        Map<String, Object> all = new LinkedHashMap<>();
        Map<String, ConfigSource> allSources = new HashMap<>();
        for (ConfigField f : schema.fields()) {
            boolean set = sources.containsKey(f.name());
            Object v = set ? values.get(f.name()) : f.defaultOrNull();
            if (v == null && f.kind() == FieldKind.JSON_OBJECT) {
                v = Map.of();
            }
            all.put(f.name(), v);
            allSources.put(f.name(), set ? sources.get(f.name()) : new ConfigSource.Default());
        }
        if (problems.isEmpty()) {
            DerivedRules.apply(all, allSources, problems, warnings);
        }
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        return new Resolved(Collections.unmodifiableMap(all), Map.copyOf(allSources), List.copyOf(warnings));
    }

    /** The warnings so far, in order. */
    List<String> warnings() {
        return List.copyOf(warnings);
    }

    /** Adds a problem found outside the layers (for example an unreadable file). */
    void problem(String text) {
        problems.add(text);
    }
}
