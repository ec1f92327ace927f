package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.Test;

/** KV_ADAPTIVE's rules one at a time, on integer keys (fingerprint: the key itself). */
class KvAdaptivePolicyTest {
    private static KvAdaptivePolicy<Integer> policy() {
        return new KvAdaptivePolicy<>(Integer::longValue);
    }

    private static void request(KvAdaptivePolicy<Integer> p, List<Integer> keys, int held) {
        p.onLookup(keys, held);
        for (int i = 0; i < held; i++) {
            p.onHit(keys.get(held - 1 - i)); // the tier touches the hits last first
        }
        for (int i = held; i < keys.size(); i++) {
            p.onPut(keys.get(i));
        }
    }

    @Test
    void aRequestsStoredChunksLeaveTailFirst() {
        KvAdaptivePolicy<Integer> p = policy();
        request(p, List.of(1, 2, 3, 4), 0);
        assertEquals(List.of(4, 3, 2, 1), p.evictionCandidates(4, k -> true));
    }

    @Test
    void orphansGoBeforeOlderChunks() {
        KvAdaptivePolicy<Integer> p = policy();
        request(p, List.of(90), 0);             // the oldest chunk
        request(p, List.of(1, 2, 3), 0);
        p.onRemove(1);                           // chunk 1 leaves: no lookup can reach 2 any more
        assertEquals(List.of(2, 90, 3), p.evictionCandidates(3, k -> true));
        p.onRemove(2);                           // and now 3
        assertEquals(List.of(3, 90), p.evictionCandidates(2, k -> true));
    }

    @Test
    void pinnedChunksAreSkipped() {
        KvAdaptivePolicy<Integer> p = policy();
        request(p, List.of(1, 2, 3), 0);
        assertEquals(List.of(2, 1), p.evictionCandidates(2, k -> k != 3));
        assertEquals(List.of(), p.evictionCandidates(2, k -> false));
    }

    @Test
    void beforeTheFirstEvictionItIsPlainRecency() {
        KvAdaptivePolicy<Integer> p = policy();
        request(p, List.of(10), 0);
        p.onRemove(10);
        request(p, List.of(10), 0);             // seen before: the reused lane
        request(p, List.of(20), 0);             // fresh, and newer
        assertEquals(0.0, p.bonusMultiple());
        assertEquals(List.of(10, 20), p.evictionCandidates(2, k -> true));
    }

    /**
     * A cache of 8 chunks under a scan of one-time chunks mixed with 4 chunks asked for again and
     * again, each after 11 others (so plain recency keeps none of them): the replicas find that a bonus of a capacity or more (fresh chunks first) hits most,
     * and the real cache then evicts a newer fresh chunk before an older reused one.
     */
    @Test
    void theTunerLearnsToKeepReusedChunksUnderAScan() {
        KvAdaptivePolicy<Integer> p = policy();
        int next = 1000;
        java.util.Set<Integer> held = new java.util.HashSet<>();
        for (int round = 0; round < 3000; round++) {
            int hot = round % 4;
            for (int key : List.of(hot, next++, next++)) { // 11 other chunks between two uses of a hot one
                boolean hit = held.contains(key);
                p.onLookup(List.of(key), hit ? 1 : 0);
                if (hit) {
                    p.onHit(key);
                    continue;
                }
                if (held.size() == 8) {
                    int victim = p.evictionCandidates(1, k -> true).getFirst();
                    p.onRemove(victim);
                    held.remove(victim);
                }
                p.onPut(key);
                held.add(key);
            }
        }
        assertEquals(true, p.bonusMultiple() >= 1, "the bonus must outlast a scan of 11 chunks, was " + p.bonusMultiple());
        for (int hot = 0; hot < 4; hot++) {
            assertEquals(true, held.contains(hot), "reused chunk " + hot + " stays");
        }
        int victim = p.evictionCandidates(1, k -> true).getFirst();
        assertEquals(true, victim >= 1000, "a fresh chunk goes first, was " + victim);
    }
}
