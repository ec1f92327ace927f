package lmcache4j.engine.config;

import static lmcache4j.engine.config.ConfigTestSupport.fails;
import static lmcache4j.engine.config.ConfigTestSupport.fromEnv;
import static lmcache4j.engine.config.ConfigTestSupport.fromYaml;
import static lmcache4j.engine.config.ConfigTestSupport.loader;
import static lmcache4j.engine.config.ConfigTestSupport.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import lmcache4j.engine.config.internal.ConfigField;
import lmcache4j.engine.config.internal.ConfigSchema;
import lmcache4j.engine.config.internal.FieldKind;

/** Unknown and unsupported keys, deprecated aliases, bad values of every type, derived rules. */
class ConfigValidationTest {
    @TempDir
    Path dir;

    private ConfigException failsWithYaml(String yaml) {
        return fails(loader(Map.of()).file(write(dir, yaml)));
    }

    private static void assertMentions(Exception e, String... parts) {
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), "expected '" + p + "' in:\n" + e.getMessage());
        }
    }

    // --- keys ---------------------------------------------------------------------------------

    @Test
    void anUnknownYamlKeyFailsListingValidKeysAndTheClosestOne() {
        ConfigException e = failsWithYaml("chunk_sise: 512\n");
        assertMentions(e, "unknown config key 'chunk_sise' (file ", "did you mean 'chunk_size'?",
                "Valid keys: blend_check_layers, ", "chunk_size", "use_layerwise");
    }

    @Test
    void anUnknownCodeKeyFailsToo() {
        ConfigException e = fails(loader(Map.of()).set("max_local_cpu", 4));
        assertMentions(e, "unknown config key 'max_local_cpu' (code); did you mean 'max_local_cpu_size'?", "Valid keys:");
    }

    @Test
    void unknownLmcacheVariablesOnlyWarnAndKnownNonFieldVariablesAreSilent() {
        List<String> warnings = new ArrayList<>();
        LMCacheEngineConfig c = loader(Map.of("LMCACHE_CHUNK_SIZ", "1", "LMCACHE_CUDART", "/x/libcudart.so",
                "LMCACHE_LOG_LEVEL", "DEBUG", "LMCACHE_CONFIG_FILE", "", "OTHER", "x", "LMCACHE_chunk_size", "8"), warnings)
                .build();
        assertEquals(256, c.chunkSize());
        assertEquals(2, warnings.size(), warnings.toString());
        assertTrue(warnings.contains("ignoring environment variable LMCACHE_CHUNK_SIZ: it is not an lmcache4j config "
                + "field (did you mean LMCACHE_CHUNK_SIZE?)"), warnings.toString());
        assertTrue(warnings.stream().anyMatch(w -> w.startsWith("ignoring environment variable LMCACHE_chunk_size")));
        assertEquals(warnings, c.warnings());
    }

    @Test
    void lmcacheKeysLmcache4jLacksAreNotSupportedInEverySource() {
        assertMentions(failsWithYaml("enable_nixl: true\n"),
                "'enable_nixl' (file ", "is not supported by lmcache4j: it configures NIXL transfer and storage");
        assertMentions(fails(loader(Map.of("LMCACHE_GDS_PATH", "/mnt/gds"))),
                "'gds_path' (env LMCACHE_GDS_PATH) is not supported by lmcache4j");
        assertMentions(fails(loader(Map.of()).set("py_enable_gc", false)), "'py_enable_gc' (code) is not supported",
                "no meaning on the JVM");
        assertMentions(failsWithYaml("ec_chunk_size: 256\n"), "'ec_chunk_size'", "not supported by lmcache4j", "EC");
    }

    @Test
    void aDeprecatedAliasOfAnUnsupportedKeyIsNotSupportedEither() {
        assertMentions(failsWithYaml("plugin_locations: [/opt/p]\n"),
                "'plugin_locations' (file ", "LMCache's deprecated name for 'runtime_plugin_locations',",
                "not supported by lmcache4j");
    }

    @Test
    void anAliasAndItsNewNameTogetherAreAConflictNamingBoth() {
        assertMentions(failsWithYaml("enable_xpyd: true\nenable_pd: true\n"),
                "both 'enable_xpyd' and 'enable_pd' are set (file ", "keep only 'enable_pd'");
        assertMentions(fails(loader(Map.of("LMCACHE_CONTROLLER_URL", "tcp://a:1", "LMCACHE_CONTROLLER_PULL_URL", "tcp://a:1"))),
                "both 'controller_url' and 'controller_pull_url' are set (env LMCACHE_CONTROLLER_URL)");
    }

    /** The alias machinery on a table whose alias target is supported: mapped, warned about once. */
    @Test
    void aDeprecatedAliasIsReadAsTheNewNameWithOneWarning() {
        ConfigSchema schema = new ConfigSchema(
                List.of(ConfigField.define("new_name", FieldKind.INT).defaultValue(1).greaterThan(0)
                        .description("test").build()),
                Map.of("old_name", "new_name"), Map.of(), Map.of(), Set.of());
        List<String> warnings = new ArrayList<>();
        ConfigResolver.Resolved r = loader(Map.of("LMCACHE_OLD_NAME", "5"), warnings).schema(schema).resolve();
        assertEquals(5, r.values().get("new_name"));
        assertEquals(new ConfigSource.Env("LMCACHE_OLD_NAME"), r.sources().get("new_name"));
        assertEquals(List.of("'old_name' (env LMCACHE_OLD_NAME) is LMCache's deprecated name for 'new_name'; "
                + "read as 'new_name', rename it"), warnings);

        ConfigResolver.Resolved fromFile = loader(Map.of()).schema(schema).file(write(dir, "old_name: 7\n")).resolve();
        assertEquals(7, fromFile.values().get("new_name"));
        // In different sources the alias is no conflict: the higher source wins as usual.
        ConfigResolver.Resolved layered = loader(Map.of("LMCACHE_NEW_NAME", "9")).schema(schema)
                .file(write(dir, "old_name: 7\n")).resolve();
        assertEquals(9, layered.values().get("new_name"));
        ConfigException bad = fails(loader(Map.of()).schema(schema).set("old_name", 0));
        assertMentions(bad, "new_name (given as 'old_name') = 0 (code) is not valid: expected an integer > 0");
        assertMentions(fails(loader(Map.of()).schema(schema).set("old_name", 2).set("new_name", 3)),
                "both 'old_name' and 'new_name' are set (code)");
        // The deprecation warning is given even when the config fails for another reason.
        List<String> seen = new ArrayList<>();
        fails(loader(Map.of(), seen).schema(schema).set("old_name", 2).set("bogus", 1));
        assertEquals(1, seen.size(), seen.toString());
    }

    // --- values -------------------------------------------------------------------------------

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource(delimiter = '|', value = {
            "CHUNK_SIZE | abc | chunk_size = \"abc\" (env LMCACHE_CHUNK_SIZE) is not valid: expected an integer > 0",
            "CHUNK_SIZE | 0 | expected an integer > 0",
            "CHUNK_SIZE | 256.0 | expected an integer > 0",
            "CHUNK_SIZE | 99999999999 | that fits in 32 bits",
            "MAX_LOCAL_CPU_SIZE | -1 | max_local_cpu_size = \"-1\" (env LMCACHE_MAX_LOCAL_CPU_SIZE) is not valid: expected a number >= 0",
            "MAX_LOCAL_CPU_SIZE | NaN | expected a number >= 0",
            "MAX_LOCAL_CPU_SIZE | 5GB | expected a number >= 0",
            "MAX_LOCAL_DISK_SIZE | Infinity | expected a number >= 0",
            "LAZY_MEMORY_INITIAL_RATIO | 0 | expected a number in (0, 1]",
            "LAZY_MEMORY_STEP_RATIO | 1.5 | expected a number in (0, 1]",
            "INTERNAL_API_SERVER_PORT_START | 70000 | expected an integer in [1, 65535]",
            "BLOCKING_TIMEOUT_SECS | -3 | expected an integer > 0",
            "MIN_RETRIEVE_TOKENS | -1 | expected an integer >= 0",
            "CACHE_POLICY | GDSF | expected one of LRU, LFU, FIFO, MRU, S3FIFO, ARC, KV_ADAPTIVE (case-insensitive)",
            "CACHE_POLICY | cost_aware | COST_AWARE (LMCache 2026) is not supported by lmcache4j yet",
            "REMOTE_SERDE | cachegen | cachegen is not supported by lmcache4j: its blobs are Python pickles",
            "REMOTE_SERDE | kivi | not supported by lmcache4j; use naive",
            "TRANSFER_CHANNEL | nixl | NIXL (GPU RDMA) is not supported by lmcache4j; its one channel is tcp",
            "PD_BUFFER_DEVICE | cuda | lmcache4j's PD buffer is host memory",
            "PD_BUFFER_SIZE | 4096 | a whole number of bytes from 1 MiB (1048576) up",
            "PD_ROLE | both | expected one of sender, receiver",
            "NUMA_MODE | interleave | expected one of auto, manual (case-insensitive), or null/empty for none",
            "LOCAL_DISK_PATH_SHARDING | by_node | expected one of by_gpu",
            "REMOTE_URL | cache-host:6379 | expected a string, a URL of the form scheme://...",
            "BLEND_CHECK_LAYERS | 1,x | expected a list of integers",
            "BLEND_THRESHOLDS | 0.1,high | expected a list of numbers",
            "EXTRA_CONFIG | [1] | expected a JSON object ({...}), got an array",
            "EXTRA_CONFIG | {\"a\": } | invalid JSON at character 7",
            "USE_LAYERWISE | enabled | expected a boolean (true, false, 1 or 0)"})
    void badEnvValuesNameTheKeyTheValueTheSourceAndWhatIsValid(String var, String value, String expected) {
        ConfigException e = fails(loader(Map.of("LMCACHE_" + var, value)));
        assertMentions(e, expected);
        assertMentions(e, "(env LMCACHE_" + var + ") is not valid");
    }

    @Test
    void badYamlValuesOfEveryKind() {
        assertMentions(failsWithYaml("chunk_size: 12.5\n"), "chunk_size = 12.5 (file ", "expected an integer > 0, got a number 12.5");
        assertMentions(failsWithYaml("chunk_size: true\n"), "expected an integer > 0, got a boolean true");
        assertMentions(failsWithYaml("local_cpu: 2\n"), "expected a boolean (true, false, 1 or 0), got a number 2");
        assertMentions(failsWithYaml("max_local_cpu_size: [1]\n"), "expected a number >= 0, got an array [1]");
        assertMentions(failsWithYaml("max_local_cpu_size: .nan\n"), "expected a number >= 0");
        assertMentions(failsWithYaml("remote_url: {a: 1}\n"), "remote_url = {\"a\": 1}", "expected a string");
        assertMentions(failsWithYaml("retrieve_locations: [a, null]\n"), "a list item cannot be null");
        assertMentions(failsWithYaml("blend_check_layers: [1, 2.5]\n"), "expected a list of integers");
        assertMentions(failsWithYaml("extra_config: [1, 2]\n"), "expected a JSON object", "got an array");
        assertMentions(failsWithYaml("extra_config: {a: [1, null]}\n"), "extra_config.a[] contains a null");
        assertMentions(failsWithYaml("chunk_size: null\n"), "chunk_size = null (file ", "this field cannot be null");
    }

    @Test
    void badCodeValues() {
        assertMentions(fails(loader(Map.of()).set("chunk_size", "many")), "chunk_size = \"many\" (code) is not valid");
        assertMentions(fails(loader(Map.of()).set("lookup_timeout_ms", 2.0)), "got a number 2.0");
        assertMentions(fails(loader(Map.of()).set("extra_config", Map.of("x", new Object()))), "extra_config values must be JSON values");
    }

    @Test
    void everyProblemIsReportedAtOnce() {
        ConfigException e = fails(loader(Map.of("LMCACHE_CHUNK_SIZE", "x", "LMCACHE_LOCAL_CPU", "maybe"))
                .file(write(dir, "bogus: 1\nenable_nixl: true\n")).set("cache_policy", "GDSF"));
        assertEquals(5, e.problems().size(), e.getMessage());
        assertTrue(e.getMessage().startsWith("invalid lmcache4j config (5 problems):"), e.getMessage());
    }

    @Test
    void builtinHashIsRefusedWithTheReasonAndTheAlternative() {
        ConfigException e = fails(loader(Map.of("LMCACHE_PRE_CACHING_HASH_ALGORITHM", "builtin")));
        assertMentions(e, "pre_caching_hash_algorithm = \"builtin\" (env LMCACHE_PRE_CACHING_HASH_ALGORITHM) is not valid",
                "Python's hash()", "PYTHONHASHSEED", "Java cannot reproduce it", "Use sha256_cbor");
    }

    // --- file shape ---------------------------------------------------------------------------

    @Test
    void aYamlFileWhoseTopLevelIsNotAMappingIsRefused() {
        assertMentions(failsWithYaml("- chunk_size: 256\n"), "must be a YAML mapping of key: value at the top level",
                "but it is an array");
        assertMentions(failsWithYaml("just text\n"), "but it is a string \"just text\"");
    }

    @Test
    void invalidYamlDuplicateKeysAndUnsafeTagsAreRefused() {
        assertMentions(failsWithYaml("chunk_size: [1\n"), "is not valid YAML");
        assertMentions(failsWithYaml("chunk_size: 1\nchunk_size: 2\n"), "is not valid YAML", "chunk_size");
        assertMentions(failsWithYaml("chunk_size: !!java.lang.ProcessBuilder [x]\n"), "is not valid YAML");
    }

    @Test
    void deeplyNestedYamlIsRefusedWithAMessageNotAStackOverflow() {
        assertMentions(failsWithYaml("a: " + "[".repeat(10_000) + "\n"), "nested deeper than 64 levels");
        assertMentions(failsWithYaml("extra_config: " + "{a: ".repeat(5_000) + "1" + "}".repeat(5_000) + "\n"),
                "nested deeper than 64 levels");
        StringBuilder block = new StringBuilder("extra_config:\n");
        for (int i = 1; i <= 200; i++) {
            block.append("  ".repeat(i)).append("k").append(i).append(":\n");
        }
        assertMentions(failsWithYaml(block.append("  ".repeat(201)).append("v\n").toString()), "nested deeper than 64 levels");
        // LMCache's real configs nest two or three levels: far below the bound.
        assertEquals(3.0, fromYaml(dir, "extra_config: {a: {b: {c: [[[1]]]}}, ping_interval: 3}\n")
                .extraDouble("ping_interval", 0));
    }

    @Test
    void aHugeBadValueIsCutInTheMessage() {
        ConfigException e = fails(loader(Map.of()).setText("extra_config", "[".repeat(100_000), "--set"));
        assertMentions(e, "extra_config = \"[[[[", "... (100002 characters) (--set) is not valid");
        assertTrue(e.getMessage().length() < 600, e.getMessage().length() + " characters");
    }

    @Test
    void aliasBombsAndHugeFilesAreRefused() {
        StringBuilder laughs = new StringBuilder("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for (int i = 1; i < 10; i++) {
            laughs.append("a").append(i).append(": &a").append(i).append(" [")
                    .append(String.join(", ", java.util.Collections.nCopies(9, "*a" + (i - 1)))).append("]\n");
        }
        assertMentions(failsWithYaml(laughs.toString()), "is not valid YAML", "aliases");
        assertMentions(failsWithYaml("# " + "x".repeat(5 * 1024 * 1024) + "\n"), "is larger than");
    }

    @Test
    void anEmptyYamlFileMeansDefaults() {
        assertEquals(LMCacheEngineConfig.defaults(), fromYaml(dir, "# nothing here\n"));
    }

    // --- derived rules and cross-field checks -------------------------------------------------

    @Test
    void blendingForcesSaveUnfullChunkAndSaysWhy() {
        LMCacheEngineConfig c = fromEnv(Map.of("LMCACHE_ENABLE_BLENDING", "true"));
        assertTrue(c.saveUnfullChunk());
        assertEquals(new ConfigSource.Derived("enable_blending=true forces it"), c.source("save_unfull_chunk"));
        assertEquals(List.of(), c.warnings());

        List<String> warnings = new ArrayList<>();
        LMCacheEngineConfig explicit = loader(Map.of("LMCACHE_SAVE_UNFULL_CHUNK", "false"), warnings)
                .set("enable_blending", true).build();
        assertTrue(explicit.saveUnfullChunk());
        assertEquals(List.of("save_unfull_chunk=false (env LMCACHE_SAVE_UNFULL_CHUNK) is overridden to true because "
                + "enable_blending=true (code), as LMCache does"), warnings);
        assertEquals("derived: enable_blending=true forces it", explicit.source("save_unfull_chunk").describe());
    }

    @Test
    void manualNumaNeedsAGpuToNodeMapping() {
        assertMentions(fails(loader(Map.of("LMCACHE_NUMA_MODE", "manual"))),
                "numa_mode=manual (env LMCACHE_NUMA_MODE) needs extra_config.gpu_to_numa_mapping");
        assertMentions(failsWithYaml("numa_mode: manual\nextra_config: {gpu_to_numa_mapping: {0: -1}}\n"),
                "extra_config.gpu_to_numa_mapping = {\"0\": -1}", "both integers >= 0");
        assertEquals("manual", fromYaml(dir, "numa_mode: manual\nextra_config: {gpu_to_numa_mapping: {0: 0, 1: 1}}\n")
                .numaMode().orElseThrow());
    }

    @Test
    void knownExtraConfigKeysAreTypeChecked() {
        assertMentions(fails(loader(Map.of("LMCACHE_EXTRA_CONFIG", "{\"use_odirect\": \"false\"}"))),
                "extra_config.use_odirect = \"false\" (env LMCACHE_EXTRA_CONFIG) is not valid: expected a boolean");
        assertMentions(failsWithYaml("extra_config: {ping_interval: 0}\n"), "extra_config.ping_interval = 0",
                "expected a number of seconds > 0");
        assertMentions(failsWithYaml("extra_config: {redis_layout: striped}\n"), "extra_config.redis_layout = \"striped\"",
                "expected one of [single, split]");
        assertMentions(failsWithYaml("extra_config: {redis_split_part_mb: 9}\n"), "extra_config.redis_split_part_mb = 9",
                "expected a whole number from 1 to 8");
        assertMentions(failsWithYaml("extra_config: {redis_split_connections: 0}\n"),
                "expected a whole number from 1 to 16");
        ConfigException wrong = org.junit.jupiter.api.Assertions.assertThrows(ConfigException.class,
                () -> fromEnv(Map.of("LMCACHE_EXTRA_CONFIG", "{\"k\": 1}")).extraString("k"));
        assertMentions(wrong, "extra_config.k = 1 (env LMCACHE_EXTRA_CONFIG) is not valid: expected a string");
    }
}
