package lmcache4j.server.mp.store;

import lmcache4j.server.mp.wire.MpObjectKey;
import static lmcache4j.server.mp.store.StoreFixtures.LAYOUT;
import static lmcache4j.server.mp.store.StoreFixtures.OBJECT;
import static lmcache4j.server.mp.store.StoreFixtures.arena;
import static lmcache4j.server.mp.store.StoreFixtures.fill;
import static lmcache4j.server.mp.store.StoreFixtures.holds;
import static lmcache4j.server.mp.store.StoreFixtures.key;
import static lmcache4j.server.mp.store.StoreFixtures.keys;
import static lmcache4j.server.mp.store.StoreFixtures.rankKeys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.SharedMemoryArena;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MpObjectStoreTest {
    private final StoreFixtures.ManualClock clock = new StoreFixtures.ManualClock();
    private final MpStoreOptions options = MpStoreOptions.DEFAULT.withReadLockTtl(Duration.ofSeconds(10))
            .withWriteTtl(Duration.ofSeconds(20)).withPendingCaps(3, 5);
    /** Eight objects' worth. */
    private MpObjectStore store = new MpObjectStore(arena(8 * OBJECT), options, clock::now);

    @AfterEach
    void close() {
        store.checkInvariants();
        store.close();
    }

    private void publish(List<MpObjectKey> keys) {
        WriteReservation reservation = store.reserveWrite("w", keys, LAYOUT);
        assertTrue(store.finishWrite(reservation));
    }

    @Test
    void aReservationGivesDisjointSlotsThatBecomeReadableOnlyWhenFinished() {
        WriteReservation reservation = store.reserveWrite("w0", keys(0, 4), LAYOUT);
        assertEquals(4, reservation.slots().size());
        Set<Long> offsets = new HashSet<>();
        for (int i = 0; i < 4; i++) {
            Slot slot = reservation.slots().get(i);
            assertEquals(i, slot.index());
            assertEquals(key(i, 0), slot.key());
            assertEquals(OBJECT, slot.length());
            assertEquals(LAYOUT, slot.layout());
            assertEquals(0, slot.offset() % OBJECT);
            assertTrue(offsets.add(slot.offset()));
            fill(store.segment(), slot, i);
        }
        assertFalse(store.contains(key(0, 0)));
        assertEquals(0, store.lookupAndLock(keys(0, 4), 1), "writing objects are invisible to lookups");
        store.checkInvariants();
        assertTrue(store.finishWrite(reservation));
        assertFalse(store.finishWrite(reservation), "a second finish is a no-op");
        assertEquals(1, store.stats().staleReservations());
        assertEquals(4, store.lookupAndLock(keys(0, 6), 1));
        List<Slot> read = store.unsafeRead(keys(0, 4));
        for (int i = 0; i < 4; i++) {
            assertTrue(holds(store.segment(), read.get(i), i));
        }
        assertEquals(4, store.releaseRead(keys(0, 4)));
        MpStoreStats stats = store.stats();
        assertEquals(4, stats.readyObjects());
        assertEquals(4 * OBJECT, stats.usedBytes());
        assertEquals(8 * OBJECT, stats.capacityBytes());
        assertEquals(0, stats.pendingReservations());
    }

    @Test
    void presentRepeatedAndBeingWrittenKeysAreSkippedWithTheirIndicesKept() {
        publish(keys(0, 2));
        WriteReservation writing = store.reserveWrite("a", List.of(key(5, 0)), LAYOUT);
        List<MpObjectKey> asked = List.of(key(0, 0), key(2, 0), key(2, 0), key(5, 0), key(1, 0), key(3, 0));
        WriteReservation reservation = store.reserveWrite("b", asked, LAYOUT);
        assertEquals(List.of(1, 5), reservation.slots().stream().map(Slot::index).toList());
        assertTrue(store.abortWrite(writing));
        WriteReservation nothing = store.reserveWrite("b", keys(0, 4), LAYOUT);
        assertTrue(nothing.isEmpty(), "everything already cached or being written");
        assertFalse(store.finishWrite(nothing));
        assertEquals(0, store.stats().staleReservations(), "an empty reservation is not misuse");
    }

    @Test
    void abortFreesTheMemoryAndAbortAllDropsOnlyThatOwner() {
        WriteReservation a1 = store.reserveWrite("a", keys(0, 2), LAYOUT);
        WriteReservation a2 = store.reserveWrite("a", keys(2, 3), LAYOUT);
        WriteReservation b = store.reserveWrite("b", keys(3, 4), LAYOUT);
        assertEquals(3, store.stats().pendingReservations());
        assertTrue(store.abortWrite(a1));
        assertFalse(store.abortWrite(a1));
        assertEquals(2 * OBJECT, store.stats().usedBytes());
        assertEquals(1, store.abortAll("a"));
        assertEquals(0, store.abortAll("a"));
        assertFalse(store.finishWrite(a2), "aborted with its owner");
        assertTrue(store.finishWrite(b));
        assertEquals(OBJECT, store.stats().usedBytes());
        assertFalse(store.contains(key(0, 0)));
        assertTrue(store.contains(key(3, 0)));
    }

    @Test
    void pendingWritesExpireAtTheirTtl() {
        WriteReservation early = store.reserveWrite("a", keys(0, 1), LAYOUT);
        clock.advanceSeconds(15);
        WriteReservation late = store.reserveWrite("a", keys(1, 2), LAYOUT);
        assertEquals(0, store.sweep());
        clock.advanceSeconds(6);
        assertEquals(1, store.sweep());
        assertFalse(store.finishWrite(early));
        assertEquals(1, store.stats().expiredWrites());
        clock.advanceSeconds(20);
        assertFalse(store.finishWrite(late), "past its TTL even before a sweep");
        assertEquals(2, store.stats().expiredWrites());
        assertEquals(0, store.stats().usedBytes());
        assertEquals(0, store.stats().pendingReservations());
    }

    @Test
    void pendingReservationsAreCappedPerOwnerAndInAll() {
        for (int i = 0; i < 3; i++) {
            assertFalse(store.reserveWrite("a", keys(i, i + 1), LAYOUT).isEmpty());
        }
        assertTrue(store.reserveWrite("a", keys(3, 4), LAYOUT).isEmpty());
        assertFalse(store.reserveWrite("b", keys(3, 4), LAYOUT).isEmpty());
        assertFalse(store.reserveWrite("c", keys(4, 5), LAYOUT).isEmpty());
        assertTrue(store.reserveWrite("d", keys(5, 6), LAYOUT).isEmpty(), "five pending in all");
        assertEquals(2, store.stats().refusedPendingCap());
        assertEquals(3, store.abortAll("a"));
        assertFalse(store.reserveWrite("d", keys(5, 6), LAYOUT).isEmpty());
    }

    @Test
    void evictionTakesTheLeastRecentlyUsedUnlockedReadyObject() {
        publish(keys(0, 8));
        store.touch(List.of(key(0, 0)));
        assertEquals(1, store.lookupAndLock(List.of(key(1, 0)), 1));
        WriteReservation writing = store.reserveWrite("w", keys(8, 10), LAYOUT);
        assertEquals(2, writing.slots().size());
        assertEquals(2, store.stats().evictions());
        assertTrue(store.contains(key(0, 0)), "touched");
        assertTrue(store.contains(key(1, 0)), "locked");
        assertFalse(store.contains(key(2, 0)));
        assertFalse(store.contains(key(3, 0)));
        assertTrue(store.finishWrite(writing));
        assertEquals(0, store.lookupAndLock(keys(2, 3), 1));
    }

    @Test
    void whenEverythingIsLockedOrBeingWrittenReservationsAreRefusedNotForced() {
        publish(keys(0, 6));
        assertEquals(6, store.lookupAndLock(keys(0, 6), 2));
        WriteReservation writing = store.reserveWrite("w", keys(6, 8), LAYOUT);
        WriteReservation refused = store.reserveWrite("x", keys(8, 10), LAYOUT);
        assertTrue(refused.isEmpty());
        assertEquals(2, store.stats().refusedNoMemory());
        assertEquals(0, store.stats().evictions());
        store.releaseRead(keys(0, 6));
        assertTrue(store.reserveWrite("x", keys(8, 9), LAYOUT).isEmpty(), "still one reader each");
        store.releaseRead(keys(0, 1));
        assertEquals(1, store.reserveWrite("x", keys(8, 9), LAYOUT).slots().size());
        assertTrue(store.abortWrite(writing));
    }

    @Test
    void aChunkCountsOnlyWhenEveryRankStoredItAndExactlyThoseAreLocked() {
        List<MpObjectKey> all = rankKeys(3, 2);
        publish(List.of(all.get(0), all.get(1), all.get(2), all.get(4), all.get(5)));
        assertEquals(1, store.prefixCountAllRanks(all, 2));
        assertEquals(1, store.prefixLockAllRanks(all, 2, 0));
        assertEquals(2, store.stats().lockedObjects());
        assertEquals(List.of(), store.unsafeRead(all.subList(0, 4)), "chunk 1 rank 1 is missing");
        assertEquals(List.of(), store.unsafeRead(List.of(all.get(2))), "present but not locked");
        assertEquals(2, store.unsafeRead(all.subList(0, 2)).size());
        assertEquals(2, store.releaseRead(all.subList(0, 2)));
        assertEquals(0, store.releaseRead(all.subList(0, 2)));
        assertEquals(2, store.stats().releaseUnderflows());
        assertThrows(IllegalArgumentException.class, () -> store.prefixLockAllRanks(all.subList(0, 3), 2, 1));
        assertThrows(IllegalArgumentException.class, () -> store.prefixLockAllRanks(all, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> store.lookupAndLock(all, -1));
    }

    @Test
    void readLocksLapseAtTheirTtlAndALookupRefreshesThem() {
        publish(keys(0, 8));
        assertEquals(1, store.lookupAndLock(keys(0, 1), 3));
        clock.advanceSeconds(8);
        assertEquals(1, store.lookupAndLock(keys(0, 1), 1), "refreshes the deadline for all four locks");
        clock.advanceSeconds(8);
        assertEquals(1, store.unsafeRead(keys(0, 1)).size());
        clock.advanceSeconds(3);
        assertEquals(List.of(), store.unsafeRead(keys(0, 1)), "lapsed");
        assertEquals(4, store.stats().expiredReadLocks());
        assertEquals(0, store.releaseRead(keys(0, 1)));
        store.touch(keys(1, 8));
        assertEquals(1, store.reserveWrite("w", keys(8, 9), LAYOUT).slots().size());
        assertFalse(store.contains(key(0, 0)), "evictable again once its locks lapsed");
    }

    @Test
    void aSlotWhoseLockLapsedAndWhoseMemoryWentToAnotherObjectNoLongerHoldsIt() {
        publish(keys(0, 1));
        Slot copied = store.lockReady(keys(0, 1)).get(0);
        assertTrue(store.stillHolds(copied), "locked: the memory is the object's");
        clock.advanceSeconds(11); // the copier's lock lapses: the object is evictable again
        assertTrue(store.stillHolds(copied), "lapsed but not reused: a copy made meanwhile is still good");
        assertEquals(1, store.sweep(), "the lapsed lock is dropped");
        assertEquals(1, store.clear(false), "and the object with it");
        WriteReservation next = store.reserveWrite("w", keys(8, 9), LAYOUT);
        assertEquals(copied.offset(), next.slots().get(0).offset(), "the memory went to another object");
        assertFalse(store.stillHolds(copied), "so a copy made across that is refused");
        assertTrue(store.finishWrite(next));
        publish(keys(0, 1)); // the same key stored again is another object
        assertFalse(store.stillHolds(copied));
    }

    @Test
    void clearWithoutForceKeepsLockedAndWritingObjects() {
        publish(keys(0, 4));
        store.lookupAndLock(keys(0, 1), 1);
        WriteReservation writing = store.reserveWrite("w", keys(4, 5), LAYOUT);
        assertEquals(3, store.clear(false));
        assertTrue(store.contains(key(0, 0)));
        assertFalse(store.contains(key(1, 0)));
        assertTrue(store.finishWrite(writing));
        assertTrue(store.contains(key(4, 0)));
    }

    @Test
    void aForcedClearHidesEverythingButHoldsLockedAndWritingMemoryUntilReleased() {
        publish(keys(0, 4));
        assertEquals(1, store.lookupAndLock(keys(0, 1), 1));
        Slot lockedSlot = store.unsafeRead(keys(0, 1)).getFirst();
        fill(store.segment(), lockedSlot, 99);
        WriteReservation writing = store.reserveWrite("w", keys(4, 5), LAYOUT);
        Slot writingSlot = writing.slots().getFirst();
        assertEquals(5, store.clear(true));
        assertFalse(store.contains(key(0, 0)));
        assertEquals(0, store.lookupAndLock(keys(0, 1), 1));
        MpStoreStats stats = store.stats();
        assertEquals(2, stats.orphanObjects());
        assertEquals(2 * OBJECT, stats.usedBytes());
        assertEquals(Map.of(), store.usageBySalt());
        store.checkInvariants();
        // the pool has room for six more: none of them may land on the orphans' bytes
        WriteReservation refill = store.reserveWrite("v", keys(0, 8), LAYOUT);
        assertEquals(6, refill.slots().size());
        for (Slot slot : refill.slots()) {
            assertNotEquals(lockedSlot.offset(), slot.offset());
            assertNotEquals(writingSlot.offset(), slot.offset());
            fill(store.segment(), slot, 1);
        }
        assertTrue(holds(store.segment(), lockedSlot, 99), "the reader's bytes were not handed out");
        store.checkInvariants();
        assertTrue(store.finishWrite(writing), "its reservation was still pending");
        assertEquals(1, store.stats().orphanObjects(), "finished, but orphaned: freed, not published");
        assertEquals(1, store.releaseRead(keys(0, 1)), "the orphan's lock, released by key");
        assertEquals(0, store.stats().orphanObjects());
        assertEquals(6 * OBJECT, store.stats().usedBytes());
        assertTrue(store.finishWrite(refill));
        assertTrue(store.contains(key(0, 0)));
        assertTrue(store.contains(key(4, 0)), "the refill's own copy of key 4");
    }

    @Test
    void usageIsAccountedPerSaltAndTrimmedToALimit() {
        List<MpObjectKey> a = List.of(key(0, 0, "a"), key(1, 0, "a"), key(2, 0, "a"));
        List<MpObjectKey> b = List.of(key(0, 0, "b"));
        publish(a);
        WriteReservation pendingB = store.reserveWrite("w", b, LAYOUT);
        assertEquals(Map.of("a", 3 * OBJECT, "b", OBJECT), store.usageBySalt());
        store.lookupAndLock(a.subList(0, 1), 1);
        assertEquals(2 * OBJECT, store.trimSalt("a", 0), "the locked one stays");
        assertEquals(OBJECT, store.saltUsage("a"));
        assertEquals(0, store.trimSalt("b", 0), "a writing object is never trimmed");
        assertTrue(store.abortWrite(pendingB));
        assertEquals(Map.of("a", OBJECT), store.usageBySalt());
        assertEquals(0, store.saltUsage("nobody"));
    }

    @Test
    void layoutsOfDifferentSizesCoexistWithoutOverlap() {
        ObjectLayout mla = ObjectLayout.mla(2, 16, 96, DType.FLOAT16);
        assertEquals(TensorShape.of(2, 16, 96), mla.shape());
        assertEquals(6144, mla.byteLength());
        WriteReservation small = store.reserveWrite("w", keys(0, 3), mla);
        WriteReservation big = store.reserveWrite("w", keys(3, 5), LAYOUT);
        assertEquals(6144, small.slots().getFirst().length());
        assertTrue(store.finishWrite(small));
        assertTrue(store.finishWrite(big));
        assertEquals(3 * 8192 + 2 * OBJECT, store.stats().usedBytes(), "6144 rounds up to two pages");
        assertThrows(IllegalArgumentException.class,
                () -> store.reserveWrite("w", keys(9, 10), ObjectLayout.kv(2, 16, 64 * 8, DType.FLOAT32)));
    }

    @Test
    void keysCompareTheirHashByContentAndAreImmutable() {
        byte[] hash = new byte[32];
        MpObjectKey one = new MpObjectKey(hash, "m", 1, 0, "");
        hash[0] = 1;
        MpObjectKey two = new MpObjectKey(new byte[32], "m", 1, 0, "");
        assertEquals(two, one);
        assertEquals(two.hashCode(), one.hashCode());
        one.chunkHash()[1] = 5;
        assertEquals(two, one);
        assertNotEquals(one, new MpObjectKey(new byte[32], "m", 2, 0, ""));
        assertNotEquals(one, new MpObjectKey(new byte[32], "m", 1, 0, "s"));
        assertThrows(IllegalArgumentException.class, () -> new MpObjectKey(new byte[31], "m", 0, 0, ""));
        assertThrows(NullPointerException.class, () -> new MpObjectKey(new byte[32], null, 0, 0, ""));
    }

    @Test
    void closingTwiceIsHarmlessAndUseAfterCloseIsAnError() {
        publish(keys(0, 2));
        store.lookupAndLock(keys(0, 1), 1);
        store.close();
        store.close();
        assertThrows(IllegalStateException.class, () -> store.reserveWrite("w", keys(0, 1), LAYOUT));
        assertThrows(IllegalStateException.class, () -> store.lookupAndLock(keys(0, 1), 1));
        store = new MpObjectStore(arena(OBJECT), options, clock::now); // for @AfterEach
    }

    @Test
    void slotOffsetsAddressTheSharedFileThatWorkersMap() throws Exception {
        String name = "lmcache4j-test-store-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        try (MpObjectStore shared = new MpObjectStore(SharedMemoryArena.create(name, 4 * OBJECT), options, clock::now);
                FileChannel channel = FileChannel.open(java.nio.file.Path.of("/dev/shm", name), StandardOpenOption.READ);
                Arena mapArena = Arena.ofConfined()) {
            MemorySegment worker = channel.map(FileChannel.MapMode.READ_ONLY, 0, 4 * OBJECT, mapArena);
            List<Slot> slots = new ArrayList<>(shared.reserveWrite("w", keys(0, 3), LAYOUT).slots());
            for (Slot slot : slots) {
                fill(shared.segment(), slot, slot.index() + 40);
            }
            for (Slot slot : slots) {
                assertTrue(holds(worker, slot, slot.index() + 40));
                assertEquals(shared.segment().get(ValueLayout.JAVA_LONG, slot.offset()), worker.get(ValueLayout.JAVA_LONG, slot.offset()));
            }
        }
    }
}
