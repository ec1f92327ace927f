package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The tuner's arithmetic with values worked out by hand: the replica's size and the sample's
 * share, the SplitMix64 finalizer, the decision every replica-capacity of sampled accesses with its
 * decay, and the tie rule. {@link BonusReplica}'s own rule is checked on a three-access trace.
 */
class BonusTunerTest {
    private static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;

    @Test
    void theReplicaHoldsAnEighthOfTheCacheBetween4096And16384Chunks() {
        assertEquals(1, new BonusTuner(1).replicaCapacity());         // never more than the cache
        assertEquals(100, new BonusTuner(100).replicaCapacity());
        assertEquals(4096, new BonusTuner(10_000).replicaCapacity()); // 10,000 / 8 = 1,250: raised to 4096
        assertEquals(5000, new BonusTuner(40_000).replicaCapacity()); // 40,000 / 8
        assertEquals(16384, new BonusTuner(1_000_000).replicaCapacity());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new BonusTuner(0));
        assertEquals("capacity must be positive, was 0", e.getMessage());
    }

    @Test
    void theSampleTakesTheReplicasShareOfTheMixedValues() {
        // 8192 chunks, a replica of 4096: half the values, those whose top bit is 0
        BonusTuner half = new BonusTuner(8192);
        assertTrue(half.inSample(0));
        assertTrue(half.inSample(Long.MAX_VALUE));
        assertFalse(half.inSample(Long.MIN_VALUE));
        assertFalse(half.inSample(-1));
        // 12,288 chunks: a third, the top 53 bits below ceil(2^53 / 3) = 3,002,399,751,580,331
        BonusTuner third = new BonusTuner(12_288);
        assertTrue(third.inSample(3_002_399_751_580_330L << 11));
        assertFalse(third.inSample(3_002_399_751_580_331L << 11));
        assertTrue(new BonusTuner(4).inSample(-1)); // a cache no larger than a replica: all
        assertFalse(half.access(GOLDEN_GAMMA)); // mixes to 0xE220...: outside the sample, no decision
    }

    @Test
    void mixIsSplitMix64sFinalizer() {
        // SplitMix64 seeded with 0 outputs mix(k * golden gamma) for k = 1, 2, 3 (Steele et al., OOPSLA '14)
        assertEquals(0xE220A8397B1DCDAFL, BonusTuner.mix(GOLDEN_GAMMA));
        assertEquals(0x6E789E6AA1B965F4L, BonusTuner.mix(2 * GOLDEN_GAMMA));
        assertEquals(0x06C45D188009454FL, BonusTuner.mix(3 * GOLDEN_GAMMA));
        assertEquals(0, BonusTuner.mix(0));
    }

    @Test
    void bonusTicksAreTheCandidatesMultipleOfTheCapacity() {
        assertEquals(125, BonusTuner.bonusTicks(0.125, 1000));
        assertEquals(2000, BonusTuner.bonusTicks(2, 1000));
        assertEquals(0, BonusTuner.bonusTicks(0, 1000));
        assertEquals(Long.MAX_VALUE, BonusTuner.bonusTicks(Double.POSITIVE_INFINITY, 5));
    }

    @Test
    void theMostHitsWinAndTiesGoToTheCandidateNearestTheChoice() {
        assertEquals(3, BonusTuner.best(new double[] {1, 1, 1, 1, 1, 1, 1, 1}, 3));
        assertEquals(7, BonusTuner.best(new double[] {1, 1, 1, 1, 1, 1, 1, 2}, 0));
        assertEquals(1, BonusTuner.best(new double[] {0, 5, 5, 0, 0, 0, 0, 0}, 0));
        assertEquals(6, BonusTuner.best(new double[] {5, 0, 0, 0, 0, 0, 5, 0}, 7));
        // 4 and 6 tie at distance 1 from 5: the lower
        assertEquals(4, BonusTuner.best(new double[] {9, 0, 0, 0, 9, 0, 9, 0}, 5));
    }

    /**
     * A cache of 4 chunks: its replicas hold 4 and sample every access; the candidates' bonuses are
     * 0, 0, 1, 2, 4, 8, 16 accesses and "always". Chunk 100 is asked for at accesses 1, 4 and 9.
     */
    @Test
    void everyFourthSampledAccessDecidesAndDecaysTheHits() {
        BonusTuner tuner = new BonusTuner(4);
        long[] trace = {100, 1, 2, 100, 3, 4, 5, 6, 100, 7, 8, 9};
        for (int t = 0; t < trace.length - 1; t++) {
            assertFalse(tuner.access(trace[t]), "access " + (t + 1) + " changes nothing");
        }
        // Access 4: every replica hits 100 (now reused, stamp 4): 1 hit each, a tie: choice 0 stays;
        // decayed to 0.9. Accesses 5 to 8 fill the replicas and evict 1 and 2 (fresh, older than
        // 100); at access 8, fresh 3 (stamp 5) is 1 access younger than reused 100 (stamp 4): bonus
        // 0 evicts 100, bonus 1 or more evicts 3. No hit: 0.81 each. Access 9 hits 100 in every
        // replica of bonus 1 or more: 1.81 against 0.81 at access 12, so candidate 2 (a quarter).
        assertTrue(tuner.access(trace[trace.length - 1]));
        assertEquals(0.25, tuner.bonusMultiple());
        assertEquals(1, tuner.bonus());
        assertEquals(0.81 * 0.9, tuner.hits(0), 1e-12);
        assertEquals(0.81 * 0.9, tuner.hits(1), 1e-12);
        for (int i = 2; i < BonusTuner.CANDIDATES.length; i++) {
            assertEquals(1.81 * 0.9, tuner.hits(i), 1e-12);
        }
    }

    @Test
    void aReplicaKeepsAReusedChunkOnlyWhileTheFreshOneIsWithinTheBonus() {
        BonusReplica recency = new BonusReplica(2, 0);
        BonusReplica always = new BonusReplica(2, Long.MAX_VALUE);
        for (BonusReplica r : new BonusReplica[] {recency, always}) {
            r.access(1, false);
            r.access(1, true);  // a hit: 1 is reused now, last used at access 2
            r.access(2, false); // fresh, access 3
            r.access(3, false); // full: bonus 0 evicts 1 (3 - 2 > 0), "always" evicts 2
            r.access(1, true);
        }
        assertEquals(1.0, recency.hits());
        assertEquals(2.0, always.hits());
        always.decay(0.5);
        assertEquals(1.0, always.hits());
    }
}
