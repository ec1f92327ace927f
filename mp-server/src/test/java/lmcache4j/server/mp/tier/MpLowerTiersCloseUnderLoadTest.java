package lmcache4j.server.mp.tier;

import static lmcache4j.server.mp.tier.TierFixtures.LAYOUT;
import static lmcache4j.server.mp.tier.TierFixtures.await;
import static lmcache4j.server.mp.tier.TierFixtures.key;
import static lmcache4j.server.mp.tier.TierFixtures.publish;
import static lmcache4j.server.mp.tier.TierFixtures.store;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * A close waits for the loads under way, and the store unmaps the pool right after: an object that
 * arrives once the close began must not be copied into the pool, and the close must not wait for a
 * copy that never comes. The remote is a real {@code lm://} server behind a relay that holds its
 * answer with the object's bytes until the test lets it go.
 */
@Timeout(90)
class MpLowerTiersCloseUnderLoadTest {
    @Test
    void anObjectArrivingAfterTheCloseBeganIsNotCopiedAndTheCloseDoesNotWaitForIt() throws Exception {
        try (LmCacheServer server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 16L << 20, Optional.empty(),
                1 << 20);
             PausableRelay relay = new PausableRelay(server.port());
             MpObjectStore store = store(2)) {
            MpL2Settings settings = MpL2Settings.NONE.withRemote(relay.url()).withStaging(4L << 20, 16)
                    .withPrefetchTimeout(Duration.ofSeconds(20));
            MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow();
            MpObjectKey a = key(7, 0, 1, 0);
            publish(store, tiers, List.of(a));
            await(() -> tiers.stats().tierWrites() == 1 && store.stats().lockedObjects() == 0, "a in the remote");
            assertEquals(1, store.clear(false));

            relay.holdLargeAnswers();
            CompletableFuture<Integer> loaded = new CompletableFuture<>();
            assertTrue(tiers.prefetch(List.of(a), 1, 1, LAYOUT, loaded::complete));
            await(() -> relay.held() > 0, "the remote's answer with a's bytes, held back");
            Thread closer = Thread.ofPlatform().name("closer").start(tiers::close);
            // TIMED_WAITING: past setting its flag and draining the copies, waiting for the load to end.
            await(() -> closer.getState() == Thread.State.TIMED_WAITING, "the close to wait for the load");
            relay.release();
            closer.join(10_000);
            assertFalse(closer.isAlive(), "the close ended as soon as the load refused its copy, not at its 35 s bound");
            assertEquals(0, loaded.get(10, TimeUnit.SECONDS), "nothing loaded once the close began");
            assertFalse(store.contains(a), "a is not in the pool");
            assertEquals(0, store.stats().usedBytes(), "its reservation given back: " + store.stats());
            assertEquals(0, tiers.stats().prefetchFailures(), "a load a close cut short is no tier's failure: " + tiers.stats());
        }
    }
}
