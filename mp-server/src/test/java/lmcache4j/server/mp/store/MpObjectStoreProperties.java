package lmcache4j.server.mp.store;

import lmcache4j.server.mp.wire.MpObjectKey;
import static lmcache4j.server.mp.store.StoreFixtures.OBJECT;
import static lmcache4j.server.mp.store.StoreFixtures.arena;
import static lmcache4j.server.mp.store.StoreFixtures.fill;
import static lmcache4j.server.mp.store.StoreFixtures.holds;
import static lmcache4j.server.mp.store.StoreFixtures.key;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import lmcache4j.allocator.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Seeded random runs of every store operation from several owners, with owners dying, forced
 * clears and both TTLs driven by a manual clock, against a small model of what must hold: after
 * each step the store's invariants hold (no overlapping slots, bytes add up, tables agree), every
 * object the model still holds a live lock on is present, and every present published object reads
 * back the bytes written for it.
 */
class MpObjectStoreProperties {
    private static final String[] OWNERS = {"w0", "w1", "w2", "w3"};
    private static final ObjectLayout SMALL = ObjectLayout.mla(1, 16, 64, DType.BFLOAT16); // 2 KiB, one page
    private static final ObjectLayout BIG = StoreFixtures.LAYOUT; // 8 KiB, two pages
    private static final int KEYS = 40;
    private static final double LOCK_TTL = 10;
    private static final double WRITE_TTL = 15;

    /** What the test believes about one pending reservation. */
    private record Pending(WriteReservation reservation, long tag, long deadline, int epoch) {
    }

    private final StoreFixtures.ManualClock clock = new StoreFixtures.ManualClock();
    private final Map<MpObjectKey, Long> published = new HashMap<>();
    /** Locks the test took and has not released, with the time they lapse. */
    private final Map<MpObjectKey, Integer> locks = new HashMap<>();
    private final Map<MpObjectKey, Long> lockDeadline = new HashMap<>();
    private final List<Pending> pending = new ArrayList<>();
    private int epoch;
    private long nextTag = 1;

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8, 42, 1234})
    void randomOperationsKeepEveryInvariant(long seed) {
        Random random = new Random(seed);
        MpStoreOptions options = MpStoreOptions.DEFAULT.withReadLockTtl(Duration.ofSeconds((long) LOCK_TTL))
                .withWriteTtl(Duration.ofSeconds((long) WRITE_TTL)).withPendingCaps(3, 8);
        try (MpObjectStore store = new MpObjectStore(arena(12 * OBJECT), options, clock::now)) {
            for (int step = 0; step < 1500; step++) {
                String op = step(store, random);
                try {
                    check(store);
                } catch (AssertionError | IllegalStateException e) {
                    throw new AssertionError("seed " + seed + ", step " + step + " (" + op + "): " + e.getMessage(), e);
                }
            }
            assertTrue(store.stats().pendingReservations() <= pending.size());
            // once every TTL has passed nothing a client took can hold memory: a clear empties the pool
            clock.advanceSeconds(WRITE_TTL + LOCK_TTL + 1);
            store.sweep();
            store.clear(false);
            store.checkInvariants();
            MpStoreStats stats = store.stats();
            assertEquals(0, stats.pendingReservations());
            assertEquals(0, stats.lockedObjects());
            assertEquals(0, stats.orphanObjects());
            assertEquals(0, stats.usedBytes());
        }
    }

    private String step(MpObjectStore store, Random random) {
        int choice = random.nextInt(100);
        String owner = OWNERS[random.nextInt(OWNERS.length)];
        if (choice < 25) {
            List<MpObjectKey> keys = randomKeys(random);
            ObjectLayout layout = random.nextBoolean() ? SMALL : BIG;
            WriteReservation reservation = store.reserveWrite(owner, keys, layout);
            long tag = nextTag++;
            for (Slot slot : reservation.slots()) {
                assertEquals(keys.get(slot.index()), slot.key());
                assertFalse(published.containsKey(slot.key()) && store.contains(slot.key()), "reserved a present key");
                fill(store.segment(), slot, tag + slot.key().hashCode());
            }
            if (!reservation.isEmpty()) {
                pending.add(new Pending(reservation, tag, clock.now() + (long) (WRITE_TTL * 1e9), epoch));
            }
            return "reserve " + reservation;
        } else if (choice < 42 && !pending.isEmpty()) {
            Pending p = pending.remove(random.nextInt(pending.size()));
            boolean finished = store.finishWrite(p.reservation);
            boolean live = clock.now() < p.deadline;
            assertEquals(live, finished, "finish of a pending reservation");
            if (finished && p.epoch == epoch) {
                for (Slot slot : p.reservation.slots()) {
                    published.put(slot.key(), p.tag + slot.key().hashCode());
                }
            }
            return "finish " + p.reservation;
        } else if (choice < 48 && !pending.isEmpty()) {
            Pending p = pending.remove(random.nextInt(pending.size()));
            boolean aborted = store.abortWrite(p.reservation);
            if (clock.now() < p.deadline) {
                assertTrue(aborted, "abort of a live reservation"); // a lapsed one may or may not be swept yet
            }
            return "abort " + p.reservation;
        } else if (choice < 51) {
            int aborted = store.abortAll(owner);
            long expected = pending.stream().filter(p -> p.reservation.owner().equals(owner) && clock.now() < p.deadline).count();
            assertTrue(aborted >= expected && aborted <= pending.stream().filter(p -> p.reservation.owner().equals(owner)).count());
            pending.removeIf(p -> p.reservation.owner().equals(owner));
            return "owner " + owner + " died";
        } else if (choice < 66) {
            List<MpObjectKey> keys = randomKeys(random);
            int readers = random.nextInt(3);
            int hits = store.lookupAndLock(keys, readers);
            for (int i = 0; i < hits; i++) {
                MpObjectKey key = keys.get(i);
                assertTrue(published.containsKey(key), "a hit the test never published");
                forgetLapsed(key);
                locks.merge(key, Math.max(1, readers), Integer::sum);
            }
            for (int i = 0; i < hits; i++) {
                lockDeadline.put(keys.get(i), clock.now() + (long) (LOCK_TTL * 1e9));
            }
            if (hits < keys.size()) {
                assertFalse(store.contains(keys.get(hits)) && !keys.subList(0, hits).contains(keys.get(hits)), "prefix ended at a present key");
            }
            List<Slot> slots = store.unsafeRead(keys.subList(0, hits));
            assertEquals(hits, slots.size());
            for (Slot slot : slots) {
                assertTrue(holds(store.segment(), slot, published.get(slot.key())), "bytes of " + slot.key());
            }
            return "lookup " + hits + " of " + keys.size();
        } else if (choice < 80) {
            List<MpObjectKey> held = new ArrayList<>(locks.keySet());
            List<MpObjectKey> release = new ArrayList<>();
            if (!held.isEmpty()) {
                release.add(held.get(random.nextInt(held.size())));
            }
            if (random.nextInt(4) == 0) {
                release.add(key(random.nextInt(KEYS), 0)); // maybe unlocked: a counted no-op
            }
            for (MpObjectKey key : release) {
                forgetLapsed(key);
                int count = locks.getOrDefault(key, 0);
                int released = store.releaseRead(List.of(key));
                if (count > 0) {
                    assertEquals(1, released, "release of a lock the test holds");
                    if (count == 1) {
                        locks.remove(key);
                    } else {
                        locks.put(key, count - 1);
                    }
                }
            }
            return "release " + release.size();
        } else if (choice < 85) {
            store.touch(randomKeys(random));
            return "touch";
        } else if (choice < 93) {
            clock.advanceSeconds(random.nextDouble() * 6);
            if (random.nextBoolean()) {
                store.sweep();
            }
            return "time passes";
        } else if (choice < 95) {
            boolean force = random.nextInt(3) == 0;
            store.clear(force);
            if (force) {
                epoch++;
                published.clear();
                locks.clear(); // the orphans' locks: still released by key, or lapsing
            }
            return "clear " + force;
        } else {
            for (String salt : List.of("", "a")) {
                store.trimSalt(salt, random.nextInt(4) * OBJECT);
            }
            return "trim";
        }
    }

    private void forgetLapsed(MpObjectKey key) {
        Long deadline = lockDeadline.get(key);
        if (deadline != null && clock.now() - deadline >= 0) {
            locks.remove(key);
            lockDeadline.remove(key);
        }
    }

    private static List<MpObjectKey> randomKeys(Random random) {
        int start = random.nextInt(KEYS);
        int n = 1 + random.nextInt(6);
        List<MpObjectKey> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int chunk = (start + i) % KEYS;
            keys.add(key(chunk, 0, chunk % 3 == 0 ? "a" : ""));
        }
        return keys;
    }

    private void check(MpObjectStore store) {
        store.checkInvariants();
        for (Map.Entry<MpObjectKey, Integer> lock : new ArrayList<>(locks.entrySet())) {
            forgetLapsed(lock.getKey());
            if (locks.containsKey(lock.getKey())) {
                assertTrue(store.contains(lock.getKey()), "a locked object was evicted: " + lock.getKey());
            }
        }
        for (Map.Entry<MpObjectKey, Long> object : new ArrayList<>(published.entrySet())) {
            Optional<Slot> slot = store.peek(object.getKey());
            if (slot.isEmpty()) {
                published.remove(object.getKey()); // evicted or trimmed, allowed when unlocked
            } else {
                assertTrue(holds(store.segment(), slot.get(), object.getValue()), "bytes of " + object.getKey());
            }
        }
        MpStoreStats stats = store.stats();
        assertTrue(stats.usedBytes() <= stats.capacityBytes());
        assertTrue(stats.pendingReservations() <= 8);
    }
}
