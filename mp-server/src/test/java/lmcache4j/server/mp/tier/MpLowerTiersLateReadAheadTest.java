package lmcache4j.server.mp.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.storage.Prefetching;
import lmcache4j.engine.storage.disk.ChunkFiles;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * A disk read ahead that comes back after its load's deadline (a disk tier has no timeout of its own,
 * unlike the remote one, whose late answers never become objects): the load is a miss at its
 * deadline, and the object the read brings later goes back to staging instead of holding it for good.
 */
@Timeout(60)
class MpLowerTiersLateReadAheadTest {
    @Test
    void anObjectReadAfterTheDeadlineIsReleasedWhenItArrives(@TempDir Path dir) throws Exception {
        try (MpObjectStore store = TierFixtures.store(2)) {
            StagingMemory staging = new StagingMemory(8L << 20);
            LocalDiskBackend disk = new LocalDiskBackend(new ChunkFiles(dir, false, false, false), staging, 64L << 20, "LRU", 2,
                    16);
            CountDownLatch slowDisk = new CountDownLatch(1);
            MpL2Settings settings = MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(8L << 20, 16)
                    .withPrefetchTimeout(Duration.ofSeconds(1));
            try (MpLowerTiers tiers = MpLowerTiers.over(store, List.of(new Gated(disk, slowDisk)), staging, settings)) {
                MpObjectKey a = TierFixtures.key(9, 0, 1, 0);
                TierFixtures.publish(store, tiers, List.of(a));
                TierFixtures.await(() -> disk.contains(TierKeys.of(a, TierFixtures.LAYOUT).orElseThrow(), false)
                        && store.stats().lockedObjects() == 0, "a on the disk");
                TierFixtures.await(() -> staging.usedBytes() == 0, "the write's staging copy to go back");
                assertEquals(1, store.clear(false));

                long start = System.nanoTime();
                assertEquals(0, load(tiers, a), "the disk's read comes after the 1 s deadline");
                assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "the load ended at its deadline");
                slowDisk.countDown(); // the read ends now, with an object nobody waits for
                TierFixtures.await(() -> staging.usedBytes() == 0, "the late read's object to go back to staging");
                assertEquals(1, load(tiers, a), "the next load is served");
                assertEquals(1, store.releaseRead(List.of(a)));
            }
        }
    }

    private static int load(MpLowerTiers tiers, MpObjectKey key) throws Exception {
        CompletableFuture<Integer> loaded = new CompletableFuture<>();
        assertTrue(tiers.prefetch(List.of(key), 1, 1, TierFixtures.LAYOUT, loaded::complete));
        return loaded.get(30, TimeUnit.SECONDS);
    }

    /** A real disk tier whose reads ahead end only once {@code open} is counted down (a disk that stalls). */
    private static final class Gated extends DelegatingTier {
        private final CountDownLatch open;

        Gated(LocalDiskBackend tier, CountDownLatch open) {
            super(tier);
            this.open = open;
        }

        @Override
        public Optional<Prefetching> prefetching() {
            Prefetching reads = tier.prefetching().orElseThrow();
            return Optional.of(key -> reads.prefetch(key).thenApplyAsync(got -> {
                try {
                    open.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return got;
            }, r -> Thread.ofVirtual().start(r)));
        }
    }
}
