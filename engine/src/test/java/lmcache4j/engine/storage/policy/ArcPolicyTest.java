package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * ARC's adaptation (Megiddo and Modha, FAST '03, Fig. 4): a B1 ghost hit raises T1's target p by
 * max(1, |B2| / |B1|) up to the capacity c, a B2 ghost hit lowers it by max(1, |B1| / |B2|) down to
 * 0, both with the ghosts' sizes before the hit; on integer keys (fingerprint: the key itself).
 */
class ArcPolicyTest {
    private static ArcPolicy<Integer> arc() {
        return new ArcPolicy<>(Integer::longValue);
    }

    @Test
    void aB1GhostHitRaisesTheTargetByB2OverB1UpToTheCapacity() {
        ArcPolicy<Integer> arc = arc();
        for (int k = 3; k <= 6; k++) {
            arc.onPut(k);
            arc.onHit(k); // T2 = 3, 4, 5, 6
        }
        arc.onPut(1);
        arc.onPut(2);    // T1 = 1, 2: six keys held, so c = 6 and each ghost list holds 6
        for (int k = 1; k <= 6; k++) {
            arc.onRemove(k); // B1 = 1, 2; B2 = 3, 4, 5, 6
        }
        arc.onPut(1);    // |B1| = 2, |B2| = 4: p = 0 + 4 / 2
        assertEquals(2.0, arc.target());
        arc.onPut(2);    // |B1| = 1, |B2| = 4: p = min(6, 2 + 4 / 1)
        assertEquals(6.0, arc.target());
        arc.onPut(3);    // a B2 hit with |B2| = 4 >= |B1| = 0: p = 6 - 1
        assertEquals(5.0, arc.target());
    }

    @Test
    void aB2GhostHitLowersTheTargetByB1OverB2DownToZero() {
        ArcPolicy<Integer> arc = arc();
        for (int k = 1; k <= 9; k++) {
            arc.onPut(k);
        }
        arc.onHit(8);
        arc.onHit(9);    // T1 = 1..7, T2 = 8, 9; c = 9
        for (int k = 1; k <= 9; k++) {
            arc.onRemove(k); // B1 = 1..7, B2 = 8, 9
        }
        for (int k = 1; k <= 4; k++) {
            arc.onPut(k); // |B1| >= |B2| each time: p rises by 1 to 4
        }
        assertEquals(4.0, arc.target());
        arc.onPut(8);    // |B1| = 3, |B2| = 2: p = 4 - 3 / 2
        assertEquals(2.5, arc.target());
        arc.onPut(9);    // |B1| = 3, |B2| = 1: p = max(0, 2.5 - 3)
        assertEquals(0.0, arc.target());
    }

    @Test
    void t2GoesFirstWhileT1IsAtItsTarget() {
        ArcPolicy<Integer> arc = arc();
        arc.onPut(1);
        arc.onPut(2);
        arc.onHit(2);    // T1 = 1, T2 = 2
        arc.onRemove(1); // B1 = 1
        arc.onPut(1);    // a B1 hit: p = 1, T2 = 2, 1
        arc.onPut(3);    // T1 = 3: at its target, not above it
        assertEquals(1.0, arc.target());
        assertEquals(List.of(2, 1, 3), arc.evictionCandidates(3, k -> true));
        arc.onPut(4);    // T1 = 3, 4: above its target
        assertEquals(List.of(3, 4, 2), arc.evictionCandidates(3, k -> true));
    }

    @Test
    void aNamedPolicyRemembersAKeyByItsHashCode() {
        CachePolicy<String> arc = CachePolicies.create("ARC");
        arc.onPut("a");
        arc.onPut("b");
        arc.onRemove("a"); // B1 remembers "a"'s hash code, not any other key's
        arc.onPut("c");    // new: T1 = b, c, above its target 0
        assertEquals(List.of("b", "c"), arc.evictionCandidates(2, k -> true));
    }
}
