package lmcache4j.engine.config;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import lmcache4j.engine.config.internal.ConfigSchema;
import lmcache4j.engine.json.Json;

/**
 * Rules over several fields, applied after all sources are merged (LMCache's {@code validate()}):
 * values one field forces on another, and checks that need more than one field. Each rule is a
 * no-op when its fields are not in the schema, so test schemas can leave them out.
 */
final class DerivedRules {
    private DerivedRules() {
    }

    static void apply(Map<String, Object> values, Map<String, ConfigSource> sources, List<String> problems,
            List<String> warnings) {
        blendingForcesUnfullChunks(values, sources, warnings);
        pdForcesUnfullChunks(values, sources, warnings);
        pdExcludesP2p(values, sources, problems);
        manualNumaNeedsMapping(values, sources, problems);
        extraConfigKeys(values, sources, problems, warnings);
    }

    /** LMCache: {@code enable_blending} sets {@code save_unfull_chunk=true} (blended segments are rarely whole chunks). */
    private static void blendingForcesUnfullChunks(Map<String, Object> values, Map<String, ConfigSource> sources,
            List<String> warnings) {
        if (!Boolean.TRUE.equals(values.get("enable_blending")) || !values.containsKey("save_unfull_chunk")
                || Boolean.TRUE.equals(values.get("save_unfull_chunk"))) {
            return;
        }
        ConfigSource was = sources.get("save_unfull_chunk");
        if (!(was instanceof ConfigSource.Default)) {
            warnings.add("save_unfull_chunk=false (" + was.describe() + ") is overridden to true because "
                    + "enable_blending=true (" + sources.get("enable_blending").describe() + "), as LMCache does");
        }
        values.put("save_unfull_chunk", true);
        sources.put("save_unfull_chunk", new ConfigSource.Derived("enable_blending=true forces it"));
    }

    /**
     * LMCache: {@code enable_pd} sets {@code save_unfull_chunk=true}: the prompt's last, partial chunk
     * is pushed too, so the decoder computes only the last position.
     */
    private static void pdForcesUnfullChunks(Map<String, Object> values, Map<String, ConfigSource> sources,
            List<String> warnings) {
        if (!Boolean.TRUE.equals(values.get("enable_pd")) || !values.containsKey("save_unfull_chunk")
                || Boolean.TRUE.equals(values.get("save_unfull_chunk"))) {
            return;
        }
        ConfigSource was = sources.get("save_unfull_chunk");
        if (!(was instanceof ConfigSource.Default)) {
            warnings.add("save_unfull_chunk=false (" + was.describe() + ") is overridden to true because "
                    + "enable_pd=true (" + sources.get("enable_pd").describe() + "), as LMCache does");
        }
        values.put("save_unfull_chunk", true);
        sources.put("save_unfull_chunk", new ConfigSource.Derived("enable_pd=true forces it"));
    }

    /** LMCache: PD and P2P are not used together in one engine. */
    private static void pdExcludesP2p(Map<String, Object> values, Map<String, ConfigSource> sources, List<String> problems) {
        if (Boolean.TRUE.equals(values.get("enable_pd")) && Boolean.TRUE.equals(values.get("enable_p2p"))) {
            problems.add("enable_pd (" + sources.get("enable_pd").describe() + ") and enable_p2p ("
                    + sources.get("enable_p2p").describe() + ") cannot both be true, as in LMCache: a PD engine's KV "
                    + "comes from its prefiller; set one of them to false");
        }
    }

    /** {@code numa_mode=manual} reads the GPU-to-node table from {@code extra_config.gpu_to_numa_mapping}. */
    private static void manualNumaNeedsMapping(Map<String, Object> values, Map<String, ConfigSource> sources,
            List<String> problems) {
        if (!"manual".equals(values.get("numa_mode")) || !(values.get("extra_config") instanceof Map<?, ?> extra)) {
            return;
        }
        String example = " (for example extra_config: {gpu_to_numa_mapping: {0: 0, 1: 1}})";
        Object mapping = extra.get("gpu_to_numa_mapping");
        if (mapping == null) {
            problems.add("numa_mode=manual (" + sources.get("numa_mode").describe()
                    + ") needs extra_config.gpu_to_numa_mapping, a mapping of GPU index to NUMA node" + example);
            return;
        }
        boolean ok = mapping instanceof Map<?, ?> m && !m.isEmpty() && m.entrySet().stream().allMatch(e ->
                ((String) e.getKey()).matches("[0-9]+") && e.getValue() instanceof Long node && node >= 0);
        if (!ok) {
            problems.add("extra_config.gpu_to_numa_mapping = " + Json.write(mapping) + " ("
                    + sources.get("extra_config").describe()
                    + ") is not valid: expected a non-empty mapping of GPU index to NUMA node, both integers >= 0" + example);
        }
    }

    /**
     * Every {@code extra_config} key of {@link ExtraConfigKeys} is checked against its declaration
     * here, so a wrong value fails at start, not mid-run. Other keys are kept, since LMCache and its
     * plugins read keys lmcache4j does not, but warned about: a misspelt key is otherwise silently
     * ignored.
     */
    private static void extraConfigKeys(Map<String, Object> values, Map<String, ConfigSource> sources,
            List<String> problems, List<String> warnings) {
        if (!(values.get("extra_config") instanceof Map<?, ?> extra)) {
            return;
        }
        String where = sources.get("extra_config").describe();
        for (Map.Entry<?, ?> e : extra.entrySet()) {
            String name = (String) e.getKey();
            Optional<ExtraConfigKey<?>> key = ExtraConfigKeys.named(name);
            if (key.isPresent()) {
                // A secret's value is never echoed, not even a malformed one.
                String shown = ExtraConfigKeys.SECRET.contains(name) ? "(hidden)" : Json.write(e.getValue());
                key.get().problem(e.getValue()).ifPresent(expected -> problems.add("extra_config." + name + " = "
                        + shown + " (" + where + ") is not valid: " + expected));
            } else {
                warnings.add("extra_config." + name + " (" + where + ") is not a key lmcache4j reads; it is kept and "
                        + "ignored" + closest(name).map(c -> " (did you mean " + c + "?)").orElse("")
                        + ". Known keys: ./lmcache4j config lists them");
            }
        }
    }

    /** The declared key closest to a misspelt {@code name}, if one is close. */
    private static Optional<String> closest(String name) {
        String best = null;
        int bestDistance = Math.max(2, name.length() / 3) + 1;
        for (ExtraConfigKey<?> key : ExtraConfigKeys.ALL) {
            int d = ConfigSchema.distance(name, key.name());
            if (d < bestDistance) {
                best = key.name();
                bestDistance = d;
            }
        }
        return Optional.ofNullable(best);
    }
}
