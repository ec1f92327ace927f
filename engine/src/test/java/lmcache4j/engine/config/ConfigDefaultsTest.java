package lmcache4j.engine.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import lmcache4j.engine.config.internal.ConfigField;
import lmcache4j.engine.config.internal.ConfigSchema;
import lmcache4j.engine.config.internal.FieldKind;

/** LMCache's defaults (spec §6.9, with lmcache4j's documented differences) and the table's own invariants. */
class ConfigDefaultsTest {
    private final LMCacheEngineConfig c = LMCacheEngineConfig.defaults();

    @Test
    void coreDefaultsAreLmcaches() {
        assertEquals(256, c.chunkSize());
        assertTrue(c.localCpu());
        assertEquals(5.0, c.maxLocalCpuSizeGb());
        assertEquals(5L << 30, c.maxLocalCpuSizeBytes());
        assertFalse(c.localCpuUseHugepages());
        assertEquals(0.0, c.reserveLocalCpuSizeGb());
        assertEquals(Optional.empty(), c.localDisk());
        assertEquals(List.of(), c.localDiskPaths());
        assertEquals("by_gpu", c.localDiskPathSharding());
        assertEquals(0.0, c.maxLocalDiskSizeGb());
        assertEquals(Optional.empty(), c.remoteUrl());
        assertEquals("naive", c.remoteSerde());
        assertFalse(c.useLayerwise());
        assertFalse(c.saveDecodeCache());
        assertFalse(c.saveUnfullChunk());
        assertEquals(10, c.blockingTimeoutSecs());
        assertEquals("LRU", c.cachePolicy());
        assertEquals(Optional.empty(), c.numaMode());
        assertFalse(c.enableAsyncLoading());
        assertEquals(Map.of(), c.extraConfig());
    }

    @Test
    void hashDefaultIsSha256CborNotLmcachesBuiltin() {
        assertEquals("sha256_cbor", c.preCachingHashAlgorithm());
        assertEquals(Optional.empty(), c.hashSeed());
    }

    @Test
    void otherDefaults() {
        assertFalse(c.enableBlending());
        assertEquals(Optional.empty(), c.blendRecomputeRatios());
        assertEquals(Optional.empty(), c.blendThresholds());
        assertEquals(Optional.empty(), c.blendCheckLayers());
        assertEquals(256, c.blendMinTokens());
        assertEquals(" # # ", c.blendSpecialStr());
        assertEquals(Optional.empty(), c.retrieveLocations());
        assertEquals(Optional.empty(), c.storeLocation());
        assertEquals(3000, c.lookupTimeoutMs());
        assertEquals(0, c.minRetrieveTokens());
        assertFalse(c.enableLazyMemoryAllocator());
        assertEquals(0.2, c.lazyMemoryInitialRatio());
        assertEquals(0.5, c.lazyMemoryExpandTriggerRatio());
        assertEquals(0.1, c.lazyMemoryStepRatio());
        assertEquals(0.0, c.lazyMemorySafeSizeGb());
        assertEquals(300, c.pinTimeoutSec());
        assertEquals(30, c.pinCheckIntervalSec());
        assertFalse(c.internalApiServerEnabled());
        assertEquals("0.0.0.0", c.internalApiServerHost());
        assertEquals(6999, c.internalApiServerPortStart());
    }

    @Test
    void everyValueComesFromDefaultsWhenNothingIsSet() {
        for (ConfigField f : ConfigSchema.lmcache4j().fields()) {
            assertInstanceOf(ConfigSource.Default.class, c.source(f.name()), f.name());
            assertEquals(f.defaultValue(), f.kind() == FieldKind.JSON_OBJECT ? Optional.empty() : c.value(f.name()));
        }
        assertEquals(List.of(), c.warnings());
    }

    @Test
    void everyFieldHasAJavaStyleGetterOfItsType() {
        Set<String> methods = Arrays.stream(LMCacheEngineConfig.class.getMethods()).map(Method::getName)
                .collect(Collectors.toSet());
        for (ConfigField f : ConfigSchema.lmcache4j().fields()) {
            String camel = camel(f.name());
            assertTrue(methods.contains(camel) || methods.contains(camel + "Gb"),
                    "LMCacheEngineConfig lacks a getter for " + f.name() + " (" + camel + ")");
        }
    }

    @Test
    void tableRowsAreWellFormed() {
        ConfigSchema s = ConfigSchema.lmcache4j();
        for (ConfigField f : s.fields()) {
            assertTrue(f.name().matches("[a-z][a-z0-9_]*"), f.name());
            assertEquals("LMCACHE_" + f.name().toUpperCase(java.util.Locale.ROOT), f.envVar());
            assertFalse(f.description().isBlank(), f.name());
            assertEquals(f.isLmcache4jOnly(), f.description().startsWith("lmcache4j only"), f.name());
            assertFalse(s.unsupportedReason(f.name()).isPresent(), f.name());
        }
        assertTrue(s.field("hash_seed").orElseThrow().isLmcache4jOnly());
        // Every deprecated alias points at a name lmcache4j either has or refuses with a reason.
        s.deprecatedAliases().values().forEach(target ->
                assertTrue(s.field(target).isPresent() || s.unsupportedReason(target).isPresent(), target));
    }

    @Test
    void unknownFieldNamesInTheApiAreRefusedWithASuggestion() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.source("chunksize"));
        assertTrue(e.getMessage().contains("did you mean 'chunk_size'"), e.getMessage());
    }

    @Test
    void describePrintsOneAlignedLinePerField() {
        List<String> lines = c.describe();
        assertEquals(ConfigSchema.lmcache4j().fields().size() + ConfigSchema.lmcache4j().extraConfigKeys().size(), lines.size(),
                "one line per field and one per declared extra_config key");
        assertTrue(lines.getFirst().matches("chunk_size +=  ?256 +\\(default\\)"), lines.getFirst());
        int eq = lines.getFirst().indexOf(" = ");
        lines.forEach(l -> assertEquals(eq, l.indexOf(" = "), l));
        assertTrue(lines.stream().anyMatch(l -> l.matches("blend_special_str +=  ?\" # # \" +\\(default\\)")), lines.toString());
    }

    static String camel(String field) {
        StringBuilder sb = new StringBuilder();
        boolean up = false;
        for (char ch : field.toCharArray()) {
            if (ch == '_') {
                up = true;
            } else {
                sb.append(up ? Character.toUpperCase(ch) : ch);
                up = false;
            }
        }
        return sb.toString();
    }
}
