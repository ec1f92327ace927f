package lmcache4j.engine.config;

import static lmcache4j.engine.config.ConfigTestSupport.fails;
import static lmcache4j.engine.config.ConfigTestSupport.fromEnv;
import static lmcache4j.engine.config.ConfigTestSupport.fromYaml;
import static lmcache4j.engine.config.ConfigTestSupport.loader;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** LMCache's value conversions (spec §6.8) from environment text, YAML and code. */
class ConfigConversionTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource({"true,true", "TRUE,true", "True,true", "1,true", "false,false", "False,false", "0,false",
            "' true ',true"})
    void envBooleansAreTrueFalseOneOrZeroInAnyCase(String text, boolean expected) {
        assertEquals(expected, fromEnv(Map.of("LMCACHE_USE_LAYERWISE", text)).useLayerwise());
    }

    @ParameterizedTest
    @ValueSource(strings = {"yes", "no", "on", "ture", "2", ""})
    void otherBooleanWordsAreRejectedWhereLmcacheWouldReadFalse(String text) {
        ConfigException e = fails(loader(Map.of("LMCACHE_LOCAL_CPU", text)));
        assertTrue(e.getMessage().contains("local_cpu = \"" + text + "\" (env LMCACHE_LOCAL_CPU) is not valid: "
                + "expected a boolean (true, false, 1 or 0)"), e.getMessage());
    }

    @Test
    void yamlBooleansAndZeroOneIntegersAreBooleans() {
        LMCacheEngineConfig c = fromYaml(dir, "local_cpu: false\nuse_layerwise: 1\nsave_decode_cache: \"TRUE\"\n");
        assertFalse(c.localCpu());
        assertTrue(c.useLayerwise());
        assertTrue(c.saveDecodeCache());
    }

    @Test
    void surroundingQuotesAreStrippedFromEnvValuesWithPythonEscapes() {
        assertEquals(512, fromEnv(Map.of("LMCACHE_CHUNK_SIZE", "\"512\"")).chunkSize());
        assertEquals(" | ", fromEnv(Map.of("LMCACHE_BLEND_SPECIAL_STR", "' | '")).blendSpecialStr());
        assertEquals("a\tb", fromEnv(Map.of("LMCACHE_BLEND_SPECIAL_STR", "\"a\\tb\"")).blendSpecialStr());
        assertEquals(Optional.of("redis://h:1"), fromEnv(Map.of("LMCACHE_REMOTE_URL", "  'redis://h:1'  ")).remoteUrl());
    }

    @Test
    void sizesInGbAreFloatsAndConvertToBytesLikeLmcache() {
        LMCacheEngineConfig c = fromEnv(Map.of("LMCACHE_MAX_LOCAL_CPU_SIZE", "0.5", "LMCACHE_MAX_LOCAL_DISK_SIZE", "100"));
        assertEquals(0.5, c.maxLocalCpuSizeGb());
        assertEquals(512L * 1024 * 1024, c.maxLocalCpuSizeBytes());
        assertEquals(100L << 30, c.maxLocalDiskSizeBytes());
        assertEquals(20.0, fromYaml(dir, "max_local_disk_size: 20\n").maxLocalDiskSizeGb());
        assertEquals(1.5e-3, fromEnv(Map.of("LMCACHE_RESERVE_LOCAL_CPU_SIZE", "1.5e-3")).reserveLocalCpuSizeGb());
    }

    @Test
    void localDiskLosesItsFileSchemeInEverySource() {
        assertEquals(Optional.of("/mnt/nvme0/"), fromEnv(Map.of("LMCACHE_LOCAL_DISK", "file:///mnt/nvme0/")).localDisk());
        assertEquals(Optional.of("/data/cache"), fromYaml(dir, "local_disk: \"file:///data/cache\"\n").localDisk());
        LMCacheEngineConfig two = loader(Map.of()).set("local_disk", "file:///a/, /b/").build();
        assertEquals(Optional.of("/a/,/b/"), two.localDisk());
        assertEquals(List.of(Path.of("/a/"), Path.of("/b/")), two.localDiskPaths());
        assertEquals(Optional.of("relative/dir"), fromEnv(Map.of("LMCACHE_LOCAL_DISK", "relative/dir")).localDisk());
    }

    @Test
    void emptyTextUnsetsANullableField() {
        assertEquals(Optional.empty(), fromEnv(Map.of("LMCACHE_REMOTE_URL", "")).remoteUrl());
        assertEquals(Optional.empty(), fromEnv(Map.of("LMCACHE_LOCAL_DISK", "file://")).localDisk());
        assertEquals(Optional.empty(), fromEnv(Map.of("LMCACHE_NUMA_MODE", "''")).numaMode());
        assertEquals(Optional.empty(), fromYaml(dir, "remote_url: null\nnuma_mode: ~\n").remoteUrl());
        assertEquals(Map.of(), fromEnv(Map.of("LMCACHE_EXTRA_CONFIG", "")).extraConfig());
    }

    @Test
    void listsAreCommaSeparatedInTextAndNativeInYaml() {
        LMCacheEngineConfig env = fromEnv(Map.of("LMCACHE_RETRIEVE_LOCATIONS", "LocalCPUBackend, ,LocalDiskBackend,",
                "LMCACHE_BLEND_CHECK_LAYERS", "1,2, 3", "LMCACHE_BLEND_THRESHOLDS", "0.1,1e-2"));
        assertEquals(Optional.of(List.of("LocalCPUBackend", "LocalDiskBackend")), env.retrieveLocations());
        assertEquals(Optional.of(List.of(1, 2, 3)), env.blendCheckLayers());
        assertEquals(Optional.of(List.of(0.1, 0.01)), env.blendThresholds());
        assertEquals(Optional.of(List.of()), fromEnv(Map.of("LMCACHE_RETRIEVE_LOCATIONS", "")).retrieveLocations());

        LMCacheEngineConfig yaml = fromYaml(dir, """
                retrieve_locations: [LocalCPUBackend, RemoteBackend]
                blend_check_layers: 7
                blend_recompute_ratios: [0.15, 1]
                """);
        assertEquals(Optional.of(List.of("LocalCPUBackend", "RemoteBackend")), yaml.retrieveLocations());
        assertEquals(Optional.of(List.of(7)), yaml.blendCheckLayers());
        assertEquals(Optional.of(List.of(0.15, 1.0)), yaml.blendRecomputeRatios());
        assertEquals(Optional.of(List.of("a", "b")), fromYaml(dir, "retrieve_locations: a,b\n").retrieveLocations());
    }

    @Test
    void extraConfigIsJsonInTextAndAMappingInYaml() {
        LMCacheEngineConfig env = fromEnv(Map.of("LMCACHE_EXTRA_CONFIG",
                "{\"ping_interval\": 15, \"use_odirect\": true, \"nested\": {\"a\": [1, 2.5, \"x\"]}, \"gone\": null}"));
        assertEquals(15L, env.extraConfig().get("ping_interval"));
        assertTrue(env.extraBoolean("use_odirect", false));
        assertEquals(Map.of("a", List.of(1L, 2.5, "x")), env.extraConfig().get("nested"));
        assertFalse(env.extraConfig().containsKey("gone"));
        assertEquals(15.0, env.extraDouble("ping_interval", 30));
        assertEquals(30.0, env.extraDouble("absent", 30));

        LMCacheEngineConfig yaml = fromYaml(dir, """
                extra_config:
                  gpu_to_numa_mapping: {0: 1, 1: 0}
                  save_chunk_meta: false
                  lookup_backoff_time: 0.01
                """);
        assertEquals(Map.of("0", 1L, "1", 0L), yaml.extraConfig().get("gpu_to_numa_mapping"));
        assertFalse(yaml.extraBoolean("save_chunk_meta", true));
        assertEquals(0.01, yaml.extraDouble("lookup_backoff_time", 0));
        assertEquals(Optional.empty(), yaml.extraString("missing"));
        // The same mapping as JSON text in YAML is accepted too (LMCache runs its converter on file values).
        assertEquals(Map.of("k", "v"), fromYaml(dir, "extra_config: '{\"k\": \"v\"}'\n").extraConfig());
    }

    @Test
    void extraConfigIsImmutable() {
        Map<String, Object> extra = fromEnv(Map.of("LMCACHE_EXTRA_CONFIG", "{\"a\": [1]}")).extraConfig();
        org.junit.jupiter.api.Assertions.assertThrows(UnsupportedOperationException.class, () -> extra.put("b", 1));
        org.junit.jupiter.api.Assertions.assertThrows(UnsupportedOperationException.class,
                () -> ((List<?>) extra.get("a")).clear());
    }

    @Test
    void choicesAreNormalised() {
        assertEquals("MRU", fromEnv(Map.of("LMCACHE_CACHE_POLICY", "mru")).cachePolicy());
        assertEquals("zstd", fromYaml(dir, "remote_serde: ZSTD\n").remoteSerde());
        assertEquals(Optional.of("auto"), fromEnv(Map.of("LMCACHE_NUMA_MODE", "Auto")).numaMode());
        assertEquals("sha256_cbor", fromEnv(Map.of("LMCACHE_PRE_CACHING_HASH_ALGORITHM", "sha256_cbor_64bit"))
                .preCachingHashAlgorithm());
    }

    @Test
    void yamlIntegersAreTextForStringFields() {
        assertEquals(Optional.of("0"), fromYaml(dir, "hash_seed: 0\n").hashSeed());
        assertEquals(Optional.of("5"), loader(Map.of()).set("hash_seed", 5L).build().hashSeed());
    }

    @Test
    void codeTakesJavaValues() {
        LMCacheEngineConfig c = loader(Map.of())
                .set("chunk_size", 128L)
                .set("max_local_cpu_size", 1)
                .set("local_cpu", Boolean.FALSE)
                .set("retrieve_locations", List.of("LocalCPUBackend"))
                .set("blend_thresholds", List.of(0.5f))
                .set("local_disk", Path.of("/var/cache/lmcache"))
                .set("extra_config", Map.of("ping_interval", 3))
                .build();
        assertEquals(128, c.chunkSize());
        assertEquals(1.0, c.maxLocalCpuSizeGb());
        assertFalse(c.localCpu());
        assertEquals(Optional.of(List.of("LocalCPUBackend")), c.retrieveLocations());
        assertEquals(Optional.of(List.of(0.5)), c.blendThresholds());
        assertEquals(Optional.of("/var/cache/lmcache"), c.localDisk());
        assertEquals(Map.of("ping_interval", 3L), c.extraConfig());
    }
}
