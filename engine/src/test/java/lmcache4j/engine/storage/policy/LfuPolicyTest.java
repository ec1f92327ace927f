package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.Test;

/** LFU across passes: a frequency's remaining keys stay after a pass takes some of them. */
class LfuPolicyTest {
    @Test
    void aPartlyTakenFrequencyKeepsItsOtherKeys() {
        CachePolicy<String> lfu = CachePolicies.create("LFU");
        for (String k : List.of("a", "b", "c")) {
            lfu.onPut(k);
        }
        lfu.onHit("c");
        assertEquals(List.of("a"), lfu.evictionCandidates(1, k -> true));
        lfu.onHit("b"); // b, still at frequency 1, goes to 2: it ties c and came later
        assertEquals(List.of("c", "b"), lfu.evictionCandidates(2, k -> true));
        assertEquals(0, lfu.size());
    }

    @Test
    void aPinnedKeyStaysInItsFrequency() {
        CachePolicy<String> lfu = CachePolicies.create("LFU");
        lfu.onPut("a");
        lfu.onPut("b");
        assertEquals(List.of("b"), lfu.evictionCandidates(1, k -> !k.equals("a")));
        lfu.onHit("a");
        assertEquals(List.of("a"), lfu.evictionCandidates(1, k -> true));
    }
}
