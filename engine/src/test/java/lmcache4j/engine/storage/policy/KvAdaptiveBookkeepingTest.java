package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

/**
 * KV_ADAPTIVE's bookkeeping at its edges: hits and the bonus rule, how many candidates a pass
 * gives, which removal breaks a request's run, siblings under one predecessor, and the bound on
 * announced chunks; on integer keys (fingerprint: the key itself).
 */
class KvAdaptiveBookkeepingTest {
    private static KvAdaptivePolicy<Integer> policy() {
        return new KvAdaptivePolicy<>(Integer::longValue);
    }

    /** A lookup of {@code keys} whose first {@code held} are held, then the tier's hits and puts. */
    private static void request(KvAdaptivePolicy<Integer> p, List<Integer> keys, int held) {
        p.onLookup(keys, held);
        for (int i = held - 1; i >= 0; i--) {
            p.onHit(keys.get(i));
        }
        for (int i = held; i < keys.size(); i++) {
            p.onPut(keys.get(i));
        }
    }

    @Test
    void anUntouchedPolicyOffersNothing() {
        KvAdaptivePolicy<Integer> p = policy();
        assertEquals(List.of(), p.evictionCandidates(1, k -> true));
        assertEquals(0, p.size());
        assertEquals(0.0, p.bonusMultiple());
    }

    @Test
    void aFreshChunkGoesFirstWhileItIsWithinTheBonusOfTheReusedOne() {
        assertTrue(KvAdaptivePolicy.freshGoesFirst(10, 5, 5));  // 5 accesses younger, a bonus of 5: still first
        assertFalse(KvAdaptivePolicy.freshGoesFirst(10, 5, 4));
        assertTrue(KvAdaptivePolicy.freshGoesFirst(3, 5, 0));   // older than the reused one
        assertTrue(KvAdaptivePolicy.freshGoesFirst(1L << 40, 0, Long.MAX_VALUE));
    }

    @Test
    void aHitMakesAChunkTheMostRecent() {
        KvAdaptivePolicy<Integer> p = policy();
        p.onPut(1);
        p.onPut(2);
        p.onHit(1); // reused and newer than 2
        p.onHit(7); // not held: nothing
        assertEquals(2, p.size());
        assertEquals(List.of(2), p.evictionCandidates(1, k -> true));
        assertEquals(List.of(2, 1), p.evictionCandidates(3, k -> true));
    }

    @Test
    void aPassGivesAtMostTheOrphansAskedFor() {
        KvAdaptivePolicy<Integer> p = policy();
        request(p, List.of(1, 2), 0);
        request(p, List.of(5, 6), 0);
        p.onRemove(1);
        p.onRemove(5); // 2 and 6 are orphans
        assertEquals(List.of(2), p.evictionCandidates(1, k -> true));
        assertEquals(List.of(2, 6), p.evictionCandidates(2, k -> true));
    }

    @Test
    void anotherChunksRemovalDoesNotBreakARequestsRun() {
        KvAdaptivePolicy<Integer> p = policy();
        request(p, List.of(90), 0);
        p.onLookup(List.of(1, 2, 3), 0);
        p.onPut(1);
        p.onPut(2);
        p.onRemove(90); // evicted between two stores of the request
        p.onPut(3);
        assertEquals(List.of(3, 2, 1), p.evictionCandidates(3, k -> true));
    }

    @Test
    void removingSiblingsKeepsTheOthersReachableAsOrphans() {
        KvAdaptivePolicy<Integer> p = policy();
        request(p, List.of(1, 2), 0);
        for (int k = 3; k <= 5; k++) {
            request(p, List.of(1, k), 1); // 1's successors, newest first: 5, 4, 3, 2
        }
        p.onRemove(3); // a middle one
        p.onRemove(2); // the last one
        p.onRemove(1); // 5 and 4 are orphans now, nothing else
        assertEquals(2, p.orphansTracked());
        assertEquals(List.of(5, 4), p.evictionCandidates(2, k -> true)); // recency alone: 4, 5
        p.onRemove(5);
        assertEquals(List.of(4), p.evictionCandidates(1, k -> true));
        assertEquals(1, p.orphansTracked()); // the removed 5 left at once
    }

    /**
     * A cache that never fills but sees removals (a client storing and deleting its keys) never runs
     * an eviction pass: the orphans it tracks must still leave with their chunks, or each removal
     * grows the policy by one node for good.
     */
    @Test
    void orphansLeaveWithTheirChunksWithoutAnEvictionPass() {
        KvAdaptivePolicy<Integer> p = policy();
        request(p, List.of(-1, -2, -3), 0);
        p.onRemove(-1); // -2 stays an orphan throughout: the order of what stays is kept
        for (int round = 0; round < 20_000; round++) {
            int head = 2 * round;
            request(p, List.of(head, head + 1), 0);
            p.onRemove(head); // head + 1 is an orphan now
            assertEquals(2, p.orphansTracked(), "round " + round + ": -2 and " + (head + 1));
            p.onRemove(head + 1);
            assertTrue(p.orphansTracked() <= p.size(), "round " + round + ": " + p.orphansTracked()
                    + " orphans tracked, " + p.size() + " chunks held");
        }
        assertEquals(2, p.size());
        assertEquals(1, p.orphansTracked());
        assertEquals(List.of(-2, -3), p.evictionCandidates(2, k -> true)); // the orphan, then recency
    }

    @Test
    void atMost65536AnnouncedChunksWaitForTheirStore() {
        KvAdaptivePolicy<Integer> p = policy();
        p.onLookup(IntStream.rangeClosed(0, KvAdaptivePolicy.MAX_ANNOUNCED).boxed().toList(), 0);
        p.onPut(0);
        p.onPut(1); // 65,536 announced: 1's predecessor is still known, so it goes first
        assertEquals(List.of(1, 0), p.evictionCandidates(2, k -> true));

        KvAdaptivePolicy<Integer> q = policy();
        q.onLookup(IntStream.rangeClosed(0, KvAdaptivePolicy.MAX_ANNOUNCED + 1).boxed().toList(), 0);
        q.onPut(0);
        q.onPut(1); // one more: the eldest, 1's, was forgotten
        assertEquals(List.of(0, 1), q.evictionCandidates(2, k -> true));
    }
}
