package lmcache4j.engine.config;

import static lmcache4j.engine.config.ConfigTestSupport.fails;
import static lmcache4j.engine.config.ConfigTestSupport.loader;
import static lmcache4j.engine.config.ConfigTestSupport.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Sources and precedence: default < file < env < code, each value reporting where it came from. */
class ConfigPrecedenceTest {
    @TempDir
    Path dir;

    @Test
    void fileIsOverriddenByEnvWhichIsOverriddenByCode() {
        Path file = write(dir, """
                chunk_size: 128
                max_local_cpu_size: 2
                remote_url: redis://file-host:6379
                cache_policy: FIFO
                """);
        LMCacheEngineConfig c = loader(Map.of("LMCACHE_MAX_LOCAL_CPU_SIZE", "3.5",
                "LMCACHE_REMOTE_URL", "redis://env-host:6379", "LMCACHE_CACHE_POLICY", "lfu"))
                .file(file)
                .set("remote_url", "lm://code-host:65432")
                .build();
        assertEquals(128, c.chunkSize());
        assertEquals(new ConfigSource.File(file), c.source("chunk_size"));
        assertEquals(3.5, c.maxLocalCpuSizeGb());
        assertEquals(new ConfigSource.Env("LMCACHE_MAX_LOCAL_CPU_SIZE"), c.source("max_local_cpu_size"));
        assertEquals(Optional.of("lm://code-host:65432"), c.remoteUrl());
        assertEquals(new ConfigSource.Code("code"), c.source("remote_url"));
        assertEquals("LFU", c.cachePolicy());
        assertEquals("env LMCACHE_CACHE_POLICY", c.source("cache_policy").describe());
        assertEquals(new ConfigSource.Default(), c.source("local_cpu"));
    }

    @Test
    void theFileIsFoundThroughLmcacheConfigFile() {
        Path file = write(dir, "chunk_size: 64\n");
        LMCacheEngineConfig c = loader(Map.of("LMCACHE_CONFIG_FILE", file.toString())).build();
        assertEquals(64, c.chunkSize());
        assertEquals("file " + file, c.source("chunk_size").describe());
    }

    @Test
    void anExplicitFileWinsOverLmcacheConfigFile() {
        Path named = write(dir, "chunk_size: 64\n");
        Path given = write(dir, "chunk_size: 32\n");
        LMCacheEngineConfig c = loader(Map.of("LMCACHE_CONFIG_FILE", named.toString())).file(given).build();
        assertEquals(32, c.chunkSize());
    }

    @Test
    void withoutAFileTheEnvironmentAloneIsRead() {
        LMCacheEngineConfig c = loader(Map.of("LMCACHE_CHUNK_SIZE", "1024", "LMCACHE_LOCAL_CPU", "False")).build();
        assertEquals(1024, c.chunkSize());
        assertFalse(c.localCpu());
    }

    @Test
    void aMissingFileIsAnErrorThatSaysWhoNamedIt() {
        ConfigException e = fails(loader(Map.of("LMCACHE_CONFIG_FILE", dir.resolve("nope.yaml").toString())));
        assertTrue(e.getMessage().contains("nope.yaml does not exist (named by LMCACHE_CONFIG_FILE)"), e.getMessage());
    }

    @Test
    void codeOverridesCanUnsetANullableFieldAndTheLastSetWins() {
        LMCacheEngineConfig c = loader(Map.of("LMCACHE_LOCAL_DISK", "/tmp/x"))
                .set("local_disk", Optional.empty())
                .set("chunk_size", 16).set("chunk_size", 32)
                .build();
        assertEquals(Optional.empty(), c.localDisk());
        assertEquals(new ConfigSource.Code("code"), c.source("local_disk"));
        assertEquals(32, c.chunkSize());
    }

    @Test
    void textOverridesAreReadLikeEnvironmentVariablesAndNamedByTheirOrigin() {
        LMCacheEngineConfig c = loader(Map.of()).setText("retrieve_locations", "LocalCPUBackend, LocalDiskBackend", "--set")
                .setText("extra_config", "{\"ping_interval\": 5}", "--set").build();
        assertEquals(Optional.of(java.util.List.of("LocalCPUBackend", "LocalDiskBackend")), c.retrieveLocations());
        assertEquals(5L, c.extraConfig().get("ping_interval"));
        assertEquals("--set", c.source("extra_config").describe());
    }

    @Test
    void hashSeedFallsBackToPythonHashSeedButAnExplicitSeedWins() {
        LMCacheEngineConfig fallback = loader(Map.of("PYTHONHASHSEED", "0")).build();
        assertEquals(Optional.of("0"), fallback.hashSeed());
        assertEquals(new ConfigSource.Env("PYTHONHASHSEED"), fallback.source("hash_seed"));

        Path file = write(dir, "hash_seed: 42\n");
        LMCacheEngineConfig explicit = loader(Map.of("PYTHONHASHSEED", "0")).file(file).build();
        assertEquals(Optional.of("42"), explicit.hashSeed());
        assertEquals(new ConfigSource.File(file), explicit.source("hash_seed"));

        assertEquals(Optional.of("7"), loader(Map.of("PYTHONHASHSEED", "0", "LMCACHE_HASH_SEED", "7")).build().hashSeed());
    }

    @Test
    void extraConfigFromAHigherSourceReplacesTheWholeMapAsInLmcache() {
        Path file = write(dir, "extra_config: {ping_interval: 10, use_odirect: true}\n");
        LMCacheEngineConfig c = loader(Map.of("LMCACHE_EXTRA_CONFIG", "{\"ping_timeout\": 2}")).file(file).build();
        assertEquals(Map.of("ping_timeout", 2L), c.extraConfig());
    }
}
