package lmcache4j.server.mp.store;

import static lmcache4j.server.mp.store.StoreFixtures.LAYOUT;
import static lmcache4j.server.mp.store.StoreFixtures.OBJECT;
import static lmcache4j.server.mp.store.StoreFixtures.arena;
import static lmcache4j.server.mp.store.StoreFixtures.key;
import static lmcache4j.server.mp.store.StoreFixtures.keys;
import static lmcache4j.server.mp.store.StoreFixtures.rankKeys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * The store at its edges: a lock or a reservation exactly at its deadline, a reader count at its
 * cap, a layout exactly the pool's size, a salt exactly at its limit, a key list with a null, a
 * store used after it closed, and what closing gives back. Each is a line where an off-by-one or a
 * missing check would let a client hold memory longer than allowed, or read memory the pool reused.
 */
class MpObjectStoreEdgesTest {
    private static final Duration LOCK_TTL = Duration.ofSeconds(10);
    private static final Duration WRITE_TTL = Duration.ofSeconds(20);
    private final StoreFixtures.ManualClock clock = new StoreFixtures.ManualClock();
    private final MpStoreOptions options = MpStoreOptions.DEFAULT.withReadLockTtl(LOCK_TTL).withWriteTtl(WRITE_TTL);
    /** Eight objects' worth. */
    private MpObjectStore store = new MpObjectStore(arena(8 * OBJECT), options, clock::now);

    @AfterEach
    void close() {
        store.checkInvariants();
        store.close();
    }

    private void publish(List<MpObjectKey> keys) {
        assertTrue(store.finishWrite(store.reserveWrite("w", keys, LAYOUT)));
    }

    private void advance(Duration d) {
        clock.nanos.addAndGet(d.toNanos());
    }

    @Test
    void aReadLockLapsesExactlyAtItsDeadlineNotANanosecondLater() {
        publish(keys(0, 1));
        assertEquals(1, store.lookupAndLock(keys(0, 1), 1));
        advance(LOCK_TTL.minusNanos(1));
        assertEquals(1, store.unsafeRead(keys(0, 1)).size(), "one nanosecond before: still locked");
        advance(Duration.ofNanos(1));
        assertEquals(List.of(), store.unsafeRead(keys(0, 1)), "at the deadline: lapsed");
        assertEquals(1, store.stats().expiredReadLocks());
    }

    @Test
    void aWriteReservationExpiresExactlyAtItsDeadline() {
        WriteReservation finishedInTime = store.reserveWrite("w", keys(0, 1), LAYOUT);
        WriteReservation swept = store.reserveWrite("w", keys(1, 2), LAYOUT);
        advance(WRITE_TTL.minusNanos(1));
        assertEquals(0, store.sweep(), "one nanosecond before: pending");
        assertTrue(store.finishWrite(finishedInTime));
        WriteReservation late = store.reserveWrite("w", keys(2, 3), LAYOUT);
        advance(Duration.ofNanos(1));
        assertEquals(1, store.sweep(), "at the deadline: aborted by the sweep");
        assertFalse(store.finishWrite(swept));
        advance(WRITE_TTL.minusNanos(1));
        assertFalse(store.finishWrite(late), "a finish at the deadline publishes nothing");
        assertEquals(2, store.stats().expiredWrites());
        assertEquals(OBJECT, store.stats().usedBytes(), "only the object finished in time holds memory");
    }

    @Test
    void aReservationIntoAFullPoolSweepsLapsedLocksBeforeGivingUp() {
        publish(keys(0, 8));
        assertEquals(8, store.lookupAndLock(keys(0, 8), 1));
        advance(LOCK_TTL); // every lock lapsed, and no sweep ran
        WriteReservation next = store.reserveWrite("w", keys(8, 9), LAYOUT);
        assertEquals(1, next.slots().size(), "the reservation swept the lapsed locks and evicted one object");
        assertEquals(8, store.stats().expiredReadLocks());
        assertEquals(1, store.stats().evictions());
        assertTrue(store.abortWrite(next));
    }

    @Test
    void lookupsStopAtTheReaderCapExactly() {
        publish(keys(0, 3));
        int perLookup = MpObjectStore.MAX_READERS_PER_LOOKUP;
        int lookups = MpObjectStore.MAX_READERS / perLookup;
        for (int i = 0; i < lookups; i++) {
            assertEquals(1, store.lookupAndLock(keys(0, 1), perLookup), "lookup " + i + " stays within the cap");
        }
        assertEquals(0, store.lookupAndLock(keys(0, 1), 1), "at the cap: one more reader is refused");
        assertEquals(List.of(), store.lockReady(keys(0, 1)), "a copier's lock too");
        // A lookup of several keys counts each as if the list named it every time (a key may be repeated):
        // one cap's worth less a lookup, then a lookup of two keys does not fit, one of one key does.
        for (int i = 0; i < lookups - 1; i++) {
            assertEquals(1, store.lookupAndLock(keys(1, 2), perLookup));
        }
        assertEquals(0, store.lookupAndLock(keys(1, 3), perLookup), "two keys' worth would pass the cap");
        assertEquals(1, store.lookupAndLock(keys(1, 2), perLookup), "one key's worth reaches it exactly");
        assertEquals(1, store.lookupAndLock(keys(2, 3), perLookup), "another object is not held back");
    }

    @Test
    void readersPerLookupAreZeroToTheCapAndNothingElse() {
        publish(keys(0, 1));
        assertEquals(1, store.lookupAndLock(keys(0, 1), MpObjectStore.MAX_READERS_PER_LOOKUP), "the cap itself");
        assertEquals(1, store.lookupAndLock(keys(0, 1), 0), "0 means one reader, LMCache's default");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> store.lookupAndLock(keys(0, 1), MpObjectStore.MAX_READERS_PER_LOOKUP + 1));
        assertTrue(e.getMessage().contains("0.." + MpObjectStore.MAX_READERS_PER_LOOKUP), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> store.lookupAndLock(keys(0, 1), -1));
    }

    @Test
    void everyRankOfEveryChunkPresentCountsEveryChunk() {
        List<MpObjectKey> all = rankKeys(3, 2);
        publish(all);
        assertEquals(3, store.prefixCountAllRanks(all, 2));
        assertEquals(3, store.prefixLockAllRanks(all, 2, 1));
        assertEquals(6, store.stats().lockedObjects());
        assertEquals(6, store.releaseRead(all));
    }

    @Test
    void aCopiersLocksCountOneEachAndGoWithTheirReleases() {
        publish(keys(0, 1));
        Slot first = store.lockReady(keys(0, 1)).getFirst();
        assertEquals(1, store.lockReady(keys(0, 1)).size(), "a second copier");
        assertEquals(1, store.stats().lockedObjects());
        advance(LOCK_TTL.minusNanos(1));
        assertEquals(0, store.sweep(), "a copier's lock lasts the lock lifetime");
        assertEquals(1, store.releaseRead(keys(0, 1)));
        assertEquals(1, store.stats().lockedObjects(), "the second copier still holds it");
        assertEquals(1, store.releaseRead(keys(0, 1)));
        assertEquals(0, store.stats().lockedObjects());
        assertEquals(0, store.releaseRead(keys(0, 1)), "nothing more to release");
        assertTrue(store.stillHolds(first));
    }

    @Test
    void anOrphanKeepsItsSlotUntilItsLastLockGoesAndStillHoldsItMeanwhile() {
        publish(keys(0, 1));
        Slot copied = store.lockReady(keys(0, 1)).getFirst();
        assertEquals(1, store.clear(true), "a forced clear orphans the locked object");
        assertFalse(store.contains(key(0, 0)));
        assertTrue(store.stillHolds(copied), "an orphan's memory is still the object's until released");
        assertEquals(1, store.stats().orphanObjects());
        assertEquals(1, store.releaseRead(keys(0, 1)));
        assertFalse(store.stillHolds(copied), "released: the memory went back");
        assertEquals(0, store.stats().usedBytes());
    }

    @Test
    void aReleaseSkipsAnOrphanBeingWrittenAndReleasesTheIndexedObject() {
        WriteReservation writing = store.reserveWrite("w", keys(0, 1), LAYOUT);
        store.clear(true); // the object being written is an orphan now, holding no lock
        publish(keys(0, 1)); // the same key, written again and published
        assertEquals(1, store.lookupAndLock(keys(0, 1), 1));
        assertEquals(1, store.releaseRead(keys(0, 1)), "the indexed object's lock, not the writing orphan's");
        assertEquals(0, store.stats().lockedObjects());
        assertEquals(0, store.stats().releaseUnderflows());
        assertTrue(store.finishWrite(writing), "the orphan's write ends; its memory goes back, unpublished");
        assertEquals(OBJECT, store.stats().usedBytes());
    }

    @Test
    void aLayoutExactlyThePoolsSizeFitsAndOneByteMoreIsAClearError() {
        store.close();
        HostArena arena = arena(2 * OBJECT);
        store = new MpObjectStore(arena, options, clock::now);
        long pool = arena.byteSize();
        ObjectLayout whole = new ObjectLayout(TensorShape.of(1, (int) pool, 1, 1), DType.UINT8);
        assertEquals(1, store.reserveWrite("w", keys(0, 1), whole).slots().size(), "a layout of the whole pool fits");
        store.abortAll("w");
        ObjectLayout unaligned = new ObjectLayout(TensorShape.of(1, (int) pool - 100, 1, 1), DType.UINT8);
        assertEquals(1, store.reserveWrite("w", keys(1, 2), unaligned).slots().size(), "rounded up, it is the whole pool");
        store.abortAll("w");
        ObjectLayout tooBig = new ObjectLayout(TensorShape.of(1, (int) pool + 1, 1, 1), DType.UINT8);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> store.reserveWrite("w", keys(2, 3), tooBig));
        assertTrue(e.getMessage().contains("more than the pool's " + pool), e.getMessage());
        assertEquals(0, store.stats().refusedNoMemory(), "refused as a mistake, not as a full pool");
    }

    @Test
    void aSaltIsTrimmedToItsLimitExactlyAndEachObjectTrimmedIsAnEviction() {
        publish(List.of(key(0, 0, "a"), key(1, 0, "a"), key(2, 0, "a"), key(3, 0, "b")));
        assertEquals(OBJECT, store.trimSalt("a", 2 * OBJECT), "one object over the limit: one trimmed");
        assertEquals(2 * OBJECT, store.saltUsage("a"));
        assertEquals(0, store.trimSalt("a", 2 * OBJECT), "at the limit: nothing more");
        assertEquals(1, store.stats().evictions());
        assertEquals(OBJECT, store.trimSalt("a", OBJECT));
        assertEquals(2, store.stats().evictions());
        assertEquals(OBJECT, store.saltUsage("b"), "another salt is never trimmed");
    }

    @Test
    void readyAndWritingObjectsAreCountedApart() {
        WriteReservation writing = store.reserveWrite("w", keys(0, 2), LAYOUT);
        publish(keys(2, 3));
        MpStoreStats stats = store.stats();
        assertEquals(1, stats.readyObjects());
        assertEquals(2, stats.writingObjects());
        assertEquals(3 * OBJECT, stats.usedBytes());
        assertTrue(store.abortWrite(writing));
        assertSame(options, store.options());
    }

    @Test
    void aNullKeyInAnyListIsRefusedNamingIt() {
        publish(keys(0, 1));
        List<MpObjectKey> withNull = Arrays.asList(key(0, 0), null);
        List<Consumer<List<MpObjectKey>>> calls = List.of(
                k -> store.reserveWrite("w", k, LAYOUT),
                k -> store.lookupAndLock(k, 1),
                k -> store.prefixCountAllRanks(k, 1),
                k -> store.lockReady(k),
                k -> store.unsafeRead(k),
                k -> store.releaseRead(k),
                k -> store.touch(k));
        for (Consumer<List<MpObjectKey>> call : calls) {
            NullPointerException e = assertThrows(NullPointerException.class, () -> call.accept(withNull));
            assertEquals("a key is null", e.getMessage());
        }
        assertEquals(0, store.stats().lockedObjects(), "nothing was locked by a refused call");
    }

    @Test
    void aClosedStoreRefusesEveryCallAndHasGivenItsPoolBack() {
        publish(keys(0, 2));
        store.lookupAndLock(keys(0, 1), 1);
        store.reserveWrite("w", keys(2, 3), LAYOUT);
        MemorySegment pool = store.segment();
        store.close();
        MpStoreStats stats = store.stats();
        assertEquals(List.of(0L, 0L, 0L, 0L, 0L, 0L), List.of(stats.readyObjects(), stats.writingObjects(),
                stats.orphanObjects(), stats.lockedObjects(), stats.usedBytes(), stats.pendingReservations()));
        assertFalse(store.contains(key(0, 0)));
        assertEquals(0, store.saltUsage(""));
        assertThrows(IllegalStateException.class, () -> pool.get(ValueLayout.JAVA_BYTE, 0), "the pool is unmapped");
        assertThrows(IllegalStateException.class, () -> store.reserveWrite("w", List.of(), LAYOUT));
        assertThrows(IllegalStateException.class, () -> store.lockReady(keys(0, 1)));
        assertThrows(IllegalStateException.class, () -> store.unsafeRead(keys(0, 1)));
        assertThrows(IllegalStateException.class, () -> store.prefixCountAllRanks(keys(0, 1), 1));
        store = new MpObjectStore(arena(OBJECT), options, clock::now); // for @AfterEach
    }

    @Test
    void optionsAndLayoutsRefuseWhatCannotWork() {
        assertEquals(1, MpStoreOptions.DEFAULT.withPendingCaps(1, 1).maxPendingTotal(), "one of each is enough");
        assertThrows(IllegalArgumentException.class, () -> MpStoreOptions.DEFAULT.withPendingCaps(0, 1));
        assertThrows(IllegalArgumentException.class, () -> MpStoreOptions.DEFAULT.withPendingCaps(2, 1));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ObjectLayout(TensorShape.of(2, 2, 0, 64), DType.BFLOAT16));
        assertTrue(e.getMessage().contains("non-empty shape"), e.getMessage());
        assertEquals(1, new ObjectLayout(TensorShape.of(1, 1, 1, 1), DType.UINT8).byteLength());
    }

    @Test
    void aReservationNamesItselfForLogs() {
        WriteReservation r = store.reserveWrite("owner-7", keys(0, 2), LAYOUT);
        assertEquals("WriteReservation[" + r.id() + ", owner 'owner-7', 2 slot(s)]", r.toString());
        assertTrue(store.abortWrite(r));
    }
}
