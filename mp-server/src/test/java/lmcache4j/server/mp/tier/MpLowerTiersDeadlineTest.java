package lmcache4j.server.mp.tier;

import static lmcache4j.server.mp.tier.TierFixtures.LAYOUT;
import static lmcache4j.server.mp.tier.TierFixtures.await;
import static lmcache4j.server.mp.tier.TierFixtures.holdsItsOwnBytes;
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
 * A load whose object does not arrive before its deadline ends as a miss, counted once, holding no
 * pool or staging memory; the object arriving later is released, and the next load is served.
 */
@Timeout(90)
class MpLowerTiersDeadlineTest {
    @Test
    void aLoadPastItsDeadlineIsOneCountedMissAndTheNextLoadIsServed() throws Exception {
        try (LmCacheServer server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 16L << 20, Optional.empty(),
                1 << 20);
             PausableRelay relay = new PausableRelay(server.port());
             MpObjectStore store = store(2)) {
            MpL2Settings settings = MpL2Settings.NONE.withRemote(relay.url()).withStaging(4L << 20, 16)
                    .withPrefetchTimeout(Duration.ofSeconds(2));
            try (MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow()) {
                MpObjectKey a = key(8, 0, 1, 0);
                publish(store, tiers, List.of(a));
                await(() -> tiers.stats().tierWrites() == 1 && store.stats().lockedObjects() == 0, "a in the remote");
                assertEquals(1, store.clear(false));

                relay.holdLargeAnswers();
                long start = System.nanoTime();
                assertEquals(0, load(tiers, a), "the remote's answer comes after the 2 s deadline");
                long took = System.nanoTime() - start;
                // Its read-ahead waited the whole 2 s; asking the remote again after that waited 2 s more.
                assertTrue(took < TimeUnit.MILLISECONDS.toNanos(3500), "the load ended at its deadline, not "
                        + TimeUnit.NANOSECONDS.toMillis(took) + " ms after it began");
                assertEquals(1, tiers.stats().prefetchFailures(), "one load, one failure: " + tiers.stats());
                assertFalse(store.contains(a));
                assertEquals(0, store.stats().usedBytes(), "its reservation given back: " + store.stats());

                relay.release();
                await(() -> tiers.stats().stagingBytes() == 0, "the late answers to be released");
                assertEquals(1, load(tiers, a), "the remote answers in time again");
                assertTrue(holdsItsOwnBytes(store, a));
                assertEquals(1, tiers.stats().prefetchFailures(), tiers.stats().toString());
                assertEquals(1, store.releaseRead(List.of(a)));
            }
        }
    }

    private static int load(MpLowerTiers tiers, MpObjectKey key) throws Exception {
        CompletableFuture<Integer> loaded = new CompletableFuture<>();
        assertTrue(tiers.prefetch(List.of(key), 1, 1, LAYOUT, loaded::complete));
        return loaded.get(30, TimeUnit.SECONDS);
    }
}
