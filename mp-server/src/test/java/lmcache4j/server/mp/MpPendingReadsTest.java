package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

import lmcache4j.server.mp.wire.MpObjectKey;

/** Prepared retrieves hold their keys within a budget; every way out gives the keys back to it. */
class MpPendingReadsTest {

    private static List<MpObjectKey> keys(int from, int to) {
        return IntStream.range(from, to).mapToObj(i -> {
            byte[] hash = new byte[32];
            hash[0] = (byte) i;
            return new MpObjectKey(hash, "m", MpObjectKey.kvRank(1, 0), 0, "");
        }).toList();
    }

    @Test
    void preparesPastTheBudgetAreRefusedAndEveryWayOutGivesTheKeysBack() {
        MpPendingReads reads = new MpPendingReads(10);
        assertTrue(reads.add(1, "r", keys(0, 4), 0));
        assertTrue(reads.add(1, "r", keys(0, 4), 5), "the same prepare again renews it, holding nothing more");
        assertTrue(reads.add(2, "r", keys(20, 24), 0), "another instance's prepare is its own");
        assertEquals(8, reads.heldKeys());
        assertFalse(reads.add(1, "r", keys(4, 7), 0), "8 + 3 keys are past the budget of 10");
        assertTrue(reads.add(1, "r", keys(4, 6), 0), "8 + 2 are not");
        assertEquals(10, reads.heldKeys());

        assertTrue(reads.remove(1, "r", keys(4, 6)), "committed");
        assertFalse(reads.remove(1, "r", keys(4, 6)), "a second commit finds nothing");
        assertEquals(8, reads.heldKeys());

        List<List<MpObjectKey>> released = new ArrayList<>();
        reads.removeInstance(2, released::add);
        assertEquals(List.of(keys(20, 24)), released, "an unregistered instance's reads, and no other's, are handed back");
        assertEquals(4, reads.heldKeys());

        reads.expire(105, 100);
        assertEquals(4, reads.heldKeys(), "renewed at 5: exactly the lock lifetime old at 105, not older");
        reads.expire(106, 100);
        assertEquals(0, reads.heldKeys(), "older than the lock lifetime: forgotten");
        assertTrue(reads.add(1, "r", keys(0, 10), 200), "the whole budget is free again");
    }

    @Test
    void twoRequestsOfOneInstanceForTheSameKeysAreTwoRetrievesEachCommittedOnce() {
        MpPendingReads reads = new MpPendingReads(10);
        assertTrue(reads.add(1, "a", keys(0, 2), 0));
        assertTrue(reads.add(1, "b", keys(0, 2), 0));
        assertEquals(4, reads.heldKeys(), "each request holds its own keys");
        assertTrue(reads.remove(1, "a", keys(0, 2)), "a's commit");
        assertFalse(reads.remove(1, "a", keys(0, 2)), "a's commit again finds nothing");
        assertTrue(reads.remove(1, "b", keys(0, 2)), "b's commit finds b's retrieve");
        assertFalse(reads.remove(2, "b", keys(0, 2)), "another instance never prepared b");
        assertEquals(0, reads.heldKeys());
    }

    @Test
    void aBudgetOfNothingIsAClearErrorAndOneKeyIsABudget() {
        assertThrows(IllegalArgumentException.class, () -> new MpPendingReads(0));
        MpPendingReads one = new MpPendingReads(1);
        assertTrue(one.add(1, "r", keys(0, 1), 0));
        assertFalse(one.add(1, "s", keys(1, 2), 0));
    }

    @Test
    void twoInstancesPreparingTheSameKeysAreTwoRetrievesAndLeaveOneByOne() {
        MpPendingReads reads = new MpPendingReads(10);
        assertTrue(reads.add(1, "r", keys(0, 4), 0));
        assertTrue(reads.add(2, "r", keys(0, 4), 0), "another instance's prepare of the same keys is its own");
        assertEquals(8, reads.heldKeys());
        List<List<MpObjectKey>> released = new ArrayList<>();
        reads.removeInstance(1, released::add);
        assertEquals(List.of(keys(0, 4)), released);
        assertTrue(reads.remove(2, "r", keys(0, 4)), "instance 2's retrieve is still there");
    }
}
