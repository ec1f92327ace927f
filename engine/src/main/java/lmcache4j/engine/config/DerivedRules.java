package lmcache4j.engine.config;

import java.util.List;
import java.util.Map;

/**
 * Rules over several fields, applied after all sources are merged (LMCache's {@code validate()}):
 * values one field forces on another, and checks that need more than one field. Each rule is a
 * no-op when its fields are not in the schema, so test schemas can leave them out.
 */
final class DerivedRules {
    /** Known {@code extra_config} keys whose value must be a JSON boolean (spec §6.10). */
    private static final List<String> BOOLEAN_EXTRAS = List.of("use_odirect", "save_only_first_rank",
            "remote_enable_mla_worker_id_as0", "use_exists_sync", "save_chunk_meta", "force_store_wait",
            "local_disk.fsync", "local_disk.claim_nonempty_dir", "local_disk.verify_in_background");
    /** Known {@code extra_config} keys whose value must be a positive number of seconds. */
    private static final List<String> POSITIVE_SECONDS_EXTRAS = List.of("ping_interval", "ping_timeout");

    private DerivedRules() {
    }

    static void apply(Map<String, Object> values, Map<String, ConfigSource> sources, List<String> problems,
            List<String> warnings) {
        blendingForcesUnfullChunks(values, sources, warnings);
        manualNumaNeedsMapping(values, sources, problems);
        knownExtraConfigKeys(values, sources, problems);
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

    /** The extra_config keys lmcache4j reads are type-checked here, so a wrong type fails at start, not mid-run. */
    private static void knownExtraConfigKeys(Map<String, Object> values, Map<String, ConfigSource> sources,
            List<String> problems) {
        if (!(values.get("extra_config") instanceof Map<?, ?> extra)) {
            return;
        }
        String where = sources.get("extra_config").describe();
        for (String key : BOOLEAN_EXTRAS) {
            Object v = extra.get(key);
            if (v != null && !(v instanceof Boolean)) {
                problems.add("extra_config." + key + " = " + Json.write(v) + " (" + where
                        + ") is not valid: expected a boolean (true or false)");
            }
        }
        for (String key : POSITIVE_SECONDS_EXTRAS) {
            Object v = extra.get(key);
            if (v != null && !(v instanceof Number n && n.doubleValue() > 0)) {
                problems.add("extra_config." + key + " = " + Json.write(v) + " (" + where
                        + ") is not valid: expected a number of seconds > 0");
            }
        }
    }
}
