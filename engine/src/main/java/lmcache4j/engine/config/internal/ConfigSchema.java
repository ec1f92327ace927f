package lmcache4j.engine.config.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

import lmcache4j.engine.config.ExtraConfigKey;
import lmcache4j.engine.config.ExtraConfigKeys;

/**
 * The config's single source of truth: the field table, LMCache's deprecated key aliases, the
 * LMCache keys lmcache4j knows but does not support (with the reason), the {@code LMCACHE_*}
 * environment variables that are not fields, and the {@code extra_config} keys lmcache4j reads. {@link #lmcache4j()} is the table the engine uses.
 */
public final class ConfigSchema {
    private final Map<String, ConfigField> fields;
    private final Map<String, String> aliases;
    private final Map<String, String> unsupported;
    private final Map<String, String> unsupportedPrefixes;
    private final Set<String> nonFieldEnvVars;

    public ConfigSchema(List<ConfigField> fields, Map<String, String> aliases, Map<String, String> unsupported,
            Map<String, String> unsupportedPrefixes, Set<String> nonFieldEnvVars) {
        Map<String, ConfigField> byName = new LinkedHashMap<>();
        for (ConfigField f : fields) {
            if (byName.put(f.name(), f) != null) {
                throw new IllegalStateException("field " + f.name() + " is defined twice");
            }
            if (unsupported.containsKey(f.name()) || aliases.containsKey(f.name())) {
                throw new IllegalStateException("field " + f.name() + " is also listed as unsupported or as an alias");
            }
        }
        this.fields = Collections.unmodifiableMap(byName);
        this.aliases = Map.copyOf(aliases);
        this.unsupported = Map.copyOf(unsupported);
        this.unsupportedPrefixes = Map.copyOf(unsupportedPrefixes);
        this.nonFieldEnvVars = Set.copyOf(nonFieldEnvVars);
    }

    /** lmcache4j's table: LMCache's field names and defaults, plus a few lmcache4j-only fields. */
    public static ConfigSchema lmcache4j() {
        return LMCacheFieldTable.SCHEMA;
    }

    /** Every field, in table order (the order the effective config is printed in). */
    public List<ConfigField> fields() {
        return List.copyOf(fields.values());
    }

    /** The field called {@code name}, if there is one. */
    public Optional<ConfigField> field(String name) {
        return Optional.ofNullable(fields.get(name));
    }

    /** The {@code extra_config} keys lmcache4j reads or checks, each with its type, default and description. */
    public List<ExtraConfigKey<?>> extraConfigKeys() {
        return ExtraConfigKeys.ALL;
    }

    /** The field names, sorted: the list an "unknown key" error gives. */
    public Set<String> fieldNames() {
        return new TreeSet<>(fields.keySet());
    }

    /** LMCache's deprecated key names mapped to the names that replace them. */
    public Map<String, String> deprecatedAliases() {
        return aliases;
    }

    /** Why lmcache4j refuses the LMCache key {@code name}, if it is one it knows but does not support. */
    public Optional<String> unsupportedReason(String name) {
        String why = unsupported.get(name);
        if (why != null) {
            return Optional.of(why);
        }
        for (Map.Entry<String, String> e : unsupportedPrefixes.entrySet()) {
            if (name.startsWith(e.getKey())) {
                return Optional.of(e.getValue());
            }
        }
        return Optional.empty();
    }

    /** {@code LMCACHE_*} variables that are not config fields and are left alone (the file selector, tool settings). */
    public Set<String> nonFieldEnvVars() {
        return nonFieldEnvVars;
    }

    /**
     * The closest known names to a misspelt {@code name} (fields and aliases), best first, at most
     * three: names that start with it (a truncated name) first, then by edit distance.
     */
    public List<String> suggest(String name) {
        List<String> candidates = new ArrayList<>(fields.keySet());
        candidates.addAll(aliases.keySet());
        int limit = Math.max(2, name.length() / 3);
        record Scored(String name, int rank) {
        }
        List<Scored> scored = new ArrayList<>();
        for (String c : candidates) {
            if (c.startsWith(name)) {
                scored.add(new Scored(c, -1));
                continue;
            }
            int d = distance(name, c);
            if (d <= limit) {
                scored.add(new Scored(c, d));
            }
        }
        scored.sort(Comparator.comparingInt(Scored::rank).thenComparingInt(s -> s.name().length())
                .thenComparing(Scored::name));
        return scored.stream().limit(3).map(Scored::name).toList();
    }

    /** Levenshtein distance, two rows. */
    public static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }
}
