package lmcache4j.server.mp.store;

import lmcache4j.server.mp.wire.MpObjectKey;
import static lmcache4j.server.mp.store.StoreFixtures.LAYOUT;
import static lmcache4j.server.mp.store.StoreFixtures.OBJECT;
import static lmcache4j.server.mp.store.StoreFixtures.arena;
import static lmcache4j.server.mp.store.StoreFixtures.fill;
import static lmcache4j.server.mp.store.StoreFixtures.holds;
import static lmcache4j.server.mp.store.StoreFixtures.key;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/**
 * Four owners write, look up, read and release overlapping keys at once on a pool too small for
 * them all. Every writer of a key writes the same bytes, so whatever a reader finds under its read
 * lock must be that key's pattern: a slot handed out twice, or evicted while locked, shows as
 * foreign bytes.
 */
class MpObjectStoreConcurrencyTest {
    @Test
    void concurrentOwnersNeverSeeEachOthersBytesUnderALock() throws Exception {
        int threads = 4;
        AtomicLong verified = new AtomicLong();
        try (MpObjectStore store = new MpObjectStore(arena(16 * OBJECT), MpStoreOptions.DEFAULT, System::nanoTime);
                ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                String owner = "w" + t;
                Random random = new Random(t);
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < 3000; i++) {
                        List<MpObjectKey> keys = new ArrayList<>();
                        int first = random.nextInt(40);
                        for (int k = 0; k < 1 + random.nextInt(4); k++) {
                            keys.add(key((first + k) % 40, 0));
                        }
                        if (random.nextBoolean()) {
                            WriteReservation reservation = store.reserveWrite(owner, keys, LAYOUT);
                            for (Slot slot : reservation.slots()) {
                                fill(store.segment(), slot, slot.key().hashCode());
                            }
                            if (random.nextInt(5) == 0) {
                                store.abortWrite(reservation);
                            } else {
                                store.finishWrite(reservation);
                            }
                        } else {
                            int hits = store.lookupAndLock(keys, 1);
                            List<MpObjectKey> locked = keys.subList(0, hits);
                            List<Slot> slots = store.unsafeRead(locked);
                            assertEquals(hits, slots.size());
                            for (Slot slot : slots) {
                                assertTrue(holds(store.segment(), slot, slot.key().hashCode()), "foreign bytes under a lock");
                                verified.incrementAndGet();
                            }
                            assertEquals(hits, store.releaseRead(locked));
                        }
                        if (i % 500 == 0) {
                            store.checkInvariants();
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : done) {
                f.get(120, TimeUnit.SECONDS);
            }
            store.checkInvariants();
            MpStoreStats stats = store.stats();
            assertEquals(0, stats.lockedObjects());
            assertEquals(0, stats.pendingReservations());
            assertEquals(0, stats.releaseUnderflows());
            assertTrue(stats.evictions() > 0, "the pool was meant to be too small: " + stats);
            assertTrue(verified.get() > 1000, "reads verified: " + verified.get());
        }
    }
}
