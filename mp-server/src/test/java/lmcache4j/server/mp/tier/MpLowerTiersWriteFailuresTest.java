package lmcache4j.server.mp.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.storage.disk.ChunkFiles;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.MpL2Stats;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * A tier that fails under the write-through: each failure is counted (the operator's only sign that
 * L2 lost writes), the other tiers still get the object, and the pool's read lock and the staging
 * memory are given back. The failing tier is a real disk tier with a fault put in front of it.
 */
@Timeout(60)
class MpLowerTiersWriteFailuresTest {
    @Test
    void aTierWhosePutThrowsIsCountedAndTheOtherTierStillGetsTheObject(@TempDir Path dir) throws Exception {
        MpObjectKey key = TierFixtures.key(1, 0, 1, 0);
        try (MpObjectStore store = TierFixtures.store(2)) {
            StagingMemory staging = new StagingMemory(8L << 20);
            LocalDiskBackend healthy = disk(dir.resolve("healthy"), staging);
            Faulty failing = new Faulty(disk(dir.resolve("failing"), staging), true, false);
            try (MpLowerTiers tiers = MpLowerTiers.over(store, List.of(failing, healthy), staging, settings(dir))) {
                TierFixtures.publish(store, tiers, List.of(key));
                TierFixtures.await(() -> tiers.stats().written() == 1, "the write-through to end");
                MpL2Stats s = tiers.stats();
                assertEquals(1, s.writeFailures(), "the failed put is counted: " + s);
                CacheEngineKey tierKey = TierKeys.of(key, TierFixtures.LAYOUT).orElseThrow();
                TierFixtures.await(() -> healthy.contains(tierKey, false), "the healthy tier to hold the object");
                TierFixtures.await(() -> staging.usedBytes() == 0, "the staged copy to be given back");
                assertEquals(1, store.clear(false), "the pool's read lock was released: the object can go");
            }
        }
    }

    @Test
    void aWriteThatThrowsIsCountedAndTheWriterGoesOn(@TempDir Path dir) throws Exception {
        try (MpObjectStore store = TierFixtures.store(2)) {
            StagingMemory staging = new StagingMemory(8L << 20);
            Faulty broken = new Faulty(disk(dir.resolve("broken"), staging), false, true); // even asking whether it holds a key throws
            try (MpLowerTiers tiers = MpLowerTiers.over(store, List.of(broken), staging, settings(dir))) {
                TierFixtures.publish(store, tiers, List.of(TierFixtures.key(2, 0, 1, 0)));
                TierFixtures.await(() -> tiers.stats().writeFailures() == 1, "the failed write to be counted");
                TierFixtures.publish(store, tiers, List.of(TierFixtures.key(2, 1, 1, 0)));
                TierFixtures.await(() -> tiers.stats().writeFailures() == 2, "the writer to go on to the next job");
                assertEquals(0, tiers.stats().written(), tiers.stats().toString());
                assertEquals(2, store.clear(false), "both read locks were released despite the failures");
            }
        }
    }

    private static MpL2Settings settings(Path dir) {
        return MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(8L << 20, 16);
    }

    private static LocalDiskBackend disk(Path dir, StagingMemory staging) throws IOException {
        return new LocalDiskBackend(new ChunkFiles(dir, false, false, false), staging, 64L << 20, "LRU", 2, 16);
    }

    /** A real tier that throws on puts, or on every lookup, where told to. */
    private static final class Faulty extends DelegatingTier {
        private final boolean failPuts;
        private final boolean failLookups;

        Faulty(LocalDiskBackend tier, boolean failPuts, boolean failLookups) {
            super(tier);
            this.failPuts = failPuts;
            this.failLookups = failLookups;
        }

        @Override
        public boolean contains(CacheKey key, boolean pin) {
            if (failLookups) {
                throw new IllegalStateException("injected: the tier's index is broken");
            }
            return super.contains(key, pin);
        }

        @Override
        public void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
            if (failPuts) {
                throw new IllegalStateException("injected: the tier refuses puts");
            }
            super.batchedSubmitPut(keys, objs);
        }
    }
}
