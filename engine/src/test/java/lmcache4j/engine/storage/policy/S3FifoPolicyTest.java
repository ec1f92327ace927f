package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

/**
 * S3-FIFO's queues one rule at a time, on integer keys (fingerprint: the key itself): S holds a
 * tenth of the most keys held, G as many fingerprints as M's share, a hit counts at most 3, and a
 * pinned key never hides an evictable one.
 */
class S3FifoPolicyTest {
    private static S3FifoPolicy<Integer> holding(int from, int to) {
        S3FifoPolicy<Integer> s3 = new S3FifoPolicy<>(Integer::longValue);
        IntStream.rangeClosed(from, to).forEach(s3::onPut);
        return s3;
    }

    private static List<Integer> range(int from, int to) {
        return IntStream.rangeClosed(from, to).boxed().toList();
    }

    @Test
    void aPinnedHeadOfSmallDoesNotHideMainsEvictableKeys() {
        S3FifoPolicy<Integer> s3 = holding(1, 2); // capacity 2: S's share is 1
        s3.onHit(1);
        assertEquals(List.of(2), s3.evictionCandidates(1, k -> true)); // 1 moves to M, 2 is the victim
        s3.onPut(3);                                                    // S = 3 (its full share), M = 1
        assertEquals(List.of(1), s3.evictionCandidates(1, k -> k != 3));
        assertEquals(1, s3.size());
        assertEquals(List.of(3), s3.evictionCandidates(1, k -> true)); // the pinned key kept its place
    }

    @Test
    void smallsShareCountsItsPinnedKeys() {
        S3FifoPolicy<Integer> s3 = holding(1, 20); // capacity 20: S's share is 2
        s3.onHit(1);
        // 1 moves to M; S gives victims while it holds its share of 2 or more: 2..19, and 20 is left
        assertEquals(range(2, 19), s3.evictionCandidates(18, k -> true));
        s3.onPut(21);                              // S = 20, 21 (its share), M = 1
        // 20 is pinned but still in S, so S is at its share and gives 21 before M's 1
        assertEquals(List.of(21), s3.evictionCandidates(1, k -> k != 20));
        assertEquals(List.of(1), s3.evictionCandidates(1, k -> true)); // S = 20 alone is below its share
        assertEquals(List.of(20), s3.evictionCandidates(1, k -> true));
    }

    @Test
    void smallHoldsATenthOfTheMostKeysHeldAndTheGhostAsManyAsMainsShare() {
        S3FifoPolicy<Integer> s3 = holding(1, 20); // capacity 20: S's share 2, G remembers 20 - 2 = 18
        // M is empty, so S gives all it has; G remembers the victims but forgets 1, the eldest of 19
        assertEquals(range(1, 19), s3.evictionCandidates(19, k -> true));
        s3.onPut(1); // forgotten: S = 20, 1
        s3.onPut(2); // remembered: M = 2
        // S at its share of 2 gives 20; S = 1 is below it, so M's 2 goes next; then S's 1
        assertEquals(List.of(20, 2, 1), s3.evictionCandidates(3, k -> true));
        assertEquals(0, s3.size());
    }

    @Test
    void aHitCountsAtMostThreeRoundsInMain() {
        S3FifoPolicy<Integer> s3 = holding(1, 3);
        s3.onHit(1);
        s3.onHit(2);
        assertEquals(List.of(3), s3.evictionCandidates(1, k -> true)); // 1 and 2 move to M at frequency 0
        for (int i = 0; i < 5; i++) {
            s3.onHit(1); // counts 3, not 5
        }
        for (int i = 0; i < 3; i++) {
            s3.onHit(2);
        }
        // both need three rounds in M; 1 is ahead of 2, and 5 hits buy it no fourth round
        assertEquals(List.of(1, 2), s3.evictionCandidates(2, k -> true));
    }

    @Test
    void aPassFindsItsVictimBehindEveryPromotion() {
        S3FifoPolicy<Integer> s3 = holding(1, 10);
        for (int k = 1; k <= 10; k++) {
            for (int i = 0; i < 3; i++) {
                s3.onHit(k);
            }
        }
        // all ten leave S for M at frequency 0 before M's head, 1, is the victim
        assertEquals(List.of(1), s3.evictionCandidates(1, k -> true));
        assertEquals(range(2, 10), s3.evictionCandidates(10, k -> true));
    }

    @Test
    void aRemovedKeyLeavesItsQueue() {
        S3FifoPolicy<Integer> s3 = holding(1, 3);
        s3.onRemove(2);
        s3.onRemove(7); // unknown: ignored
        assertEquals(2, s3.size());
        assertEquals(List.of(1, 3), s3.evictionCandidates(3, k -> true));
        assertEquals(List.of(), s3.evictionCandidates(1, k -> true));
    }

    @Test
    void aHitInMainBuysOneMoreRoundAndAnUnhitKeyNone() {
        S3FifoPolicy<Integer> s3 = holding(1, 3);
        s3.onHit(1);
        s3.onHit(2);
        assertEquals(List.of(3), s3.evictionCandidates(1, k -> true)); // M = 1, 2 at frequency 0; G remembers 3
        s3.onHit(1);
        assertEquals(List.of(2), s3.evictionCandidates(1, k -> true)); // 1 takes its round, 2 goes
        s3.onPut(3);    // remembered: M = 1 (frequency 0), 3
        s3.onHit(1);    // one round again, not less
        assertEquals(List.of(3), s3.evictionCandidates(1, k -> true));
        assertEquals(List.of(1), s3.evictionCandidates(1, k -> true));
    }
}
