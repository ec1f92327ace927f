package lmcache4j.engine.config;

import static lmcache4j.engine.config.ConfigTestSupport.fails;
import static lmcache4j.engine.config.ConfigTestSupport.fromEnv;
import static lmcache4j.engine.config.ConfigTestSupport.loader;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

/** The tiers' typed settings come from the declared extra_config keys, checked once at load. */
class TierSettingsTest {

    @Test
    void theDiskTierReadsItsDeclaredKeysWithTheirDefaults() {
        LMCacheEngineConfig plain = fromEnv(Map.of("LMCACHE_LOCAL_DISK", "/a,/b", "LMCACHE_MAX_LOCAL_DISK_SIZE", "1"));
        DiskTierSettings disk = plain.diskTier().orElseThrow();
        assertEquals(List.of(Path.of("/a"), Path.of("/b")), disk.directories());
        assertEquals(Path.of("/b"), disk.directoryOf(3));
        assertEquals(1L << 30, disk.capacityBytes());
        assertEquals(new DiskTierSettings(disk.directories(), 1L << 30, "LRU", false, false, false, 4, 64, false), disk);

        DiskTierSettings tuned = fromEnv(Map.of("LMCACHE_LOCAL_DISK", "/a", "LMCACHE_MAX_LOCAL_DISK_SIZE", "1",
                "LMCACHE_EXTRA_CONFIG", "{\"use_odirect\": true, \"local_disk.io_threads\": 2, "
                        + "\"local_disk.max_queued_puts\": 8, \"local_disk.verify_in_background\": true}"))
                .diskTier().orElseThrow();
        assertTrue(tuned.directIo() && tuned.verifyInBackground());
        assertEquals(2, tuned.ioThreads());
        assertEquals(8, tuned.maxQueuedPuts());
        assertTrue(fromEnv(Map.of("LMCACHE_LOCAL_DISK", "/a")).diskTier().isEmpty(), "no size: no disk tier");
    }

    @Test
    void theRemoteTierReadsPingsAndTheMlaRule() {
        RemoteTierSettings remote = fromEnv(Map.of("LMCACHE_REMOTE_URL", "lm://h:1",
                "LMCACHE_EXTRA_CONFIG", "{\"ping_interval\": 2.5}")).remoteTier().orElseThrow();
        assertEquals(2.5, remote.pingIntervalSecs());
        assertEquals(5.0, remote.pingTimeoutSecs());
        assertEquals(Optional.empty(), remote.mlaWorkerIdAs0());
        assertTrue(remote.readsAsWorkerZero(true, 2, 1), "unset: on for an MLA model");
        assertFalse(remote.readsAsWorkerZero(false, 2, 1));
        assertFalse(remote.readsAsWorkerZero(true, 2, 0), "worker 0 writes the copy");
        assertTrue(fromEnv(Map.of()).remoteTier().isEmpty());
    }

    @Test
    void declaredKeysAreCheckedAndUnknownOnesWarnWithTheClosestName() {
        ConfigException e = fails(loader(Map.of("LMCACHE_EXTRA_CONFIG", "{\"local_disk.io_threads\": 2.5}")));
        assertTrue(e.getMessage().contains("extra_config.local_disk.io_threads = 2.5 (env LMCACHE_EXTRA_CONFIG) is not "
                + "valid: expected a whole number >= 1"), e.getMessage());
        LMCacheEngineConfig typo = fromEnv(Map.of("LMCACHE_EXTRA_CONFIG", "{\"local_disk.io_thread\": 2}"));
        assertEquals(1, typo.warnings().size(), typo.warnings().toString());
        assertTrue(typo.warnings().getFirst().contains("did you mean local_disk.io_threads?"), typo.warnings().getFirst());
        assertTrue(fromEnv(Map.of()).describe().stream().anyMatch(l -> l.matches(
                "extra_config\\.local_disk\\.io_threads += 4 +\\(default\\)")), "the config lists declared keys");
    }
}
