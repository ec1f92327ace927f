package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.Test;

/** ARC's and S3-FIFO's defining moves, on integer keys. */
class ArcAndS3FifoTest {
    @Test
    void arcSendsAKeyItsGhostRemembersToT2AndGrowsT1sTarget() {
        ArcPolicy<Integer> arc = new ArcPolicy<>(Integer::longValue);
        for (int k = 1; k <= 4; k++) {
            arc.onPut(k);
        }
        arc.onHit(4); // 4 is in T2 now; T1 = 1, 2, 3
        assertEquals(List.of(1), arc.evictionCandidates(1, k -> true)); // T1 is above its target 0
        arc.onRemove(1); // B1 remembers 1
        arc.onPut(1);    // a B1 ghost hit: into T2, T1's target grows
        arc.onPut(5);    // new: T1
        // T1 = 2, 3, 5 (size 3) > target 1: T1's least recent first, then T2 (4, 1)
        assertEquals(List.of(2, 3, 5, 4, 1), arc.evictionCandidates(5, k -> true));
    }

    @Test
    void s3fifoPromotesWhatWasHitWhileNewAndGhostsTheRest() {
        S3FifoPolicy<Integer> s3 = new S3FifoPolicy<>(Integer::longValue);
        for (int k = 1; k <= 20; k++) {
            s3.onPut(k); // capacity 20: S's share is 2
        }
        s3.onHit(1);
        // S holds every key (S >= its share): 1 was hit, so it moves to M; 2 is the victim and G remembers it
        assertEquals(List.of(2), s3.evictionCandidates(1, k -> true));
        assertEquals(19, s3.size()); // a chosen candidate leaves the bookkeeping at once, as in LMCache
        s3.onPut(2); // a ghost: straight into M
        assertEquals(List.of(3), s3.evictionCandidates(1, k -> true));
    }

    @Test
    void s3fifoSkipsPinnedKeysWithoutLosingThem() {
        S3FifoPolicy<Integer> s3 = new S3FifoPolicy<>(Integer::longValue);
        s3.onPut(1);
        s3.onPut(2);
        assertEquals(List.of(2), s3.evictionCandidates(1, k -> k != 1));
        assertEquals(1, s3.size());
        assertEquals(List.of(), s3.evictionCandidates(1, k -> false));
        assertEquals(1, s3.size());
    }
}
