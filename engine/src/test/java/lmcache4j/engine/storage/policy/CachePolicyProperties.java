package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * Every policy against a deliberately naive reference model of LMCache's semantics (spec §3.6):
 * the same random sequences of puts, hits, removals and candidate requests (with random keys
 * refused as pinned or shared) must give the same candidates in the same order.
 */
class CachePolicyProperties {
    sealed interface Op permits Put, Hit, Remove, Candidates {
    }

    record Put(int key) implements Op {
    }

    record Hit(int key) implements Op {
    }

    record Remove(int key) implements Op {
    }

    record Candidates(int n, Set<Integer> pinned) implements Op {
    }

    /** The naive model: a list of entries with a frequency and the time they entered it. */
    static final class Model {
        record Entry(int key, int freq, long since, long inserted) {
        }

        private final String policy;
        private final List<Entry> entries = new ArrayList<>();
        private long clock;

        Model(String policy) {
            this.policy = policy;
        }

        void put(int key) {
            if (entries.stream().noneMatch(e -> e.key == key)) {
                entries.add(new Entry(key, 1, clock, clock++));
            }
        }

        void hit(int key) {
            for (int i = 0; i < entries.size(); i++) {
                Entry e = entries.get(i);
                if (e.key == key) {
                    switch (policy) {
                        case "LRU", "MRU" -> {
                            entries.remove(i);
                            entries.add(new Entry(key, e.freq, e.since, clock++));
                        }
                        case "LFU" -> entries.set(i, new Entry(key, e.freq + 1, clock++, e.inserted));
                        default -> { }
                    }
                    return;
                }
            }
        }

        void remove(int key) {
            entries.removeIf(e -> e.key == key);
        }

        List<Integer> candidates(int n, Predicate<Integer> evictable) {
            List<Entry> order = new ArrayList<>(entries);
            switch (policy) {
                case "MRU" -> java.util.Collections.reverse(order);
                case "LFU" -> order.sort(Comparator.comparingInt(Entry::freq).thenComparingLong(Entry::since));
                default -> { }
            }
            List<Integer> chosen = order.stream().map(Entry::key).filter(evictable).limit(n).toList();
            if (policy.equals("LFU")) {
                chosen.forEach(this::remove); // LFU forgets its candidates when it picks them
            }
            return chosen;
        }
    }

    @Property
    void lruMatchesTheModel(@ForAll("ops") List<Op> ops) {
        check("LRU", ops);
    }

    @Property
    void mruMatchesTheModel(@ForAll("ops") List<Op> ops) {
        check("MRU", ops);
    }

    @Property
    void fifoMatchesTheModel(@ForAll("ops") List<Op> ops) {
        check("FIFO", ops);
    }

    @Property
    void lfuMatchesTheModel(@ForAll("ops") List<Op> ops) {
        check("LFU", ops);
    }

    private static void check(String name, List<Op> ops) {
        CachePolicy<Integer> policy = CachePolicies.create(name);
        Model model = new Model(name);
        Set<Integer> present = new HashSet<>();
        for (Op op : ops) {
            switch (op) {
                case Put p -> {
                    if (present.add(p.key())) { // backends only put absent keys
                        policy.onPut(p.key());
                        model.put(p.key());
                    }
                }
                case Hit h -> {
                    policy.onHit(h.key());
                    model.hit(h.key());
                }
                case Remove r -> {
                    present.remove(r.key());
                    policy.onRemove(r.key());
                    model.remove(r.key());
                }
                case Candidates c -> {
                    Predicate<Integer> evictable = k -> !c.pinned().contains(k);
                    List<Integer> got = policy.evictionCandidates(c.n(), evictable);
                    assertEquals(model.candidates(c.n(), evictable), got, name + " candidates after " + op);
                    got.forEach(k -> assertEquals(true, evictable.test(k), "a pinned key was offered"));
                    // The backend evicts what it was offered.
                    for (int k : got) {
                        present.remove(k);
                        policy.onRemove(k);
                        model.remove(k);
                    }
                }
            }
            assertEquals(present.size(), policy.size(), name + " tracks exactly the present keys");
        }
    }

    @Provide
    Arbitrary<List<Op>> ops() {
        Arbitrary<Integer> keys = Arbitraries.integers().between(0, 12);
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(4, keys.map(k -> (Op) new Put(k))),
                net.jqwik.api.Tuple.of(4, keys.map(k -> (Op) new Hit(k))),
                net.jqwik.api.Tuple.of(1, keys.map(k -> (Op) new Remove(k))),
                net.jqwik.api.Tuple.of(2, Combinators.combine(Arbitraries.integers().between(1, 4),
                        keys.set().ofMaxSize(4)).as((n, pinned) -> (Op) new Candidates(n, pinned))));
        return op.list().ofMaxSize(80);
    }

    @Test
    void unknownPoliciesAreRejectedWithTheValidNames() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CachePolicies.create("GDSF"));
        assertEquals("unknown cache_policy 'GDSF'; valid: LRU, LFU, FIFO, MRU, S3FIFO, ARC, KV_ADAPTIVE", e.getMessage());
        assertEquals("LRU", CachePolicies.create(" lru ").name());
    }

    @Test
    void lfuEvictsTheLeastUsedFirstAndFifoWithinAFrequency() {
        CachePolicy<String> lfu = CachePolicies.create("LFU");
        for (String k : List.of("a", "b", "c")) {
            lfu.onPut(k);
        }
        lfu.onHit("a");
        lfu.onHit("a");
        lfu.onHit("c");
        assertEquals(List.of("b", "c", "a"), lfu.evictionCandidates(3, k -> true));
        assertEquals(0, lfu.size());
        Map<String, Integer> unused = new HashMap<>();
        assertEquals(List.of(), CachePolicies.<String>create("LRU").evictionCandidates(2, unused::containsKey));
    }
}
