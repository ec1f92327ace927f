package lmcache4j.server.controller.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;

/**
 * Model-based properties of {@link ChunkIndex}: random chains of admits, evicts, holder, worker
 * and instance removals (over a small key space, so probe runs collide, wrap and shift) are applied
 * to the index and to a plain map; after every step the forward index, the reverse index, the
 * entry count and the model agree, and a removed holder leaves no trace.
 */
class ChunkIndexProperties {
    private static final List<String> INSTANCES = List.of("a", "b", "c");
    private static final List<String> LOCATIONS = List.of("LocalCPUBackend", "LocalDiskBackend");

    sealed interface Op permits Admit, Evict, RemoveHolder, RemoveWorker, RemoveInstance {
    }

    record Admit(Holder h, long key) implements Op {
    }

    record Evict(Holder h, long key) implements Op {
    }

    record RemoveHolder(Holder h) implements Op {
    }

    record RemoveWorker(String instance, int worker) implements Op {
    }

    record RemoveInstance(String instance) implements Op {
    }

    @Provide
    Arbitrary<List<Op>> chains() {
        Arbitrary<Holder> holders = Combinators.combine(Arbitraries.of(INSTANCES), Arbitraries.integers().between(0, 1),
                Arbitraries.of(LOCATIONS)).as(Holder::new);
        // Keys near 0, near the sign bit and a few collisions in the mixed hash's low bits.
        Arbitrary<Long> keys = Arbitraries.oneOf(Arbitraries.longs().between(-3, 40), Arbitraries.of(Long.MIN_VALUE,
                Long.MAX_VALUE, 1L << 40, 2L << 40, 3L << 40), Arbitraries.longs());
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(12, Combinators.combine(holders, keys).as(Admit::new)),
                net.jqwik.api.Tuple.of(5, Combinators.combine(holders, keys).as(Evict::new)),
                net.jqwik.api.Tuple.of(1, holders.map(RemoveHolder::new)),
                net.jqwik.api.Tuple.of(1, Combinators.combine(Arbitraries.of(INSTANCES), Arbitraries.integers().between(0, 1))
                        .as(RemoveWorker::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.of(INSTANCES).map(RemoveInstance::new)));
        return op.list().ofMinSize(1).ofMaxSize(400);
    }

    @Property(tries = 300)
    void indexAgreesWithAMapAfterEveryStep(@ForAll("chains") List<Op> ops) {
        ChunkIndex index = new ChunkIndex(4); // tiny: growth happens during the chain
        Map<Long, Set<Holder>> model = new HashMap<>();
        for (Op op : ops) {
            switch (op) {
                case Admit a -> assertEquals(model.computeIfAbsent(a.key(), k -> new HashSet<>()).add(a.h()),
                        index.admit(a.h(), a.key()), "admit result of " + a);
                case Evict e -> {
                    Set<Holder> s = model.get(e.key());
                    assertEquals(s != null && s.remove(e.h()), index.evict(e.h(), e.key()), "evict result of " + e);
                }
                case RemoveHolder r -> {
                    long expected = removeFromModel(model, h -> h.equals(r.h()));
                    assertEquals(expected, index.removeHolder(r.h()));
                    assertNoTrace(index, r.h());
                }
                case RemoveWorker r -> {
                    long expected = removeFromModel(model, h -> h.instanceId().equals(r.instance()) && h.workerId() == r.worker());
                    assertEquals(expected, index.removeWorker(r.instance(), r.worker()));
                }
                case RemoveInstance r -> {
                    long expected = removeFromModel(model, h -> h.instanceId().equals(r.instance()));
                    assertEquals(expected, index.removeInstance(r.instance()));
                }
            }
            assertAgrees(index, model);
        }
    }

    private static long removeFromModel(Map<Long, Set<Holder>> model, java.util.function.Predicate<Holder> which) {
        long n = 0;
        for (Set<Holder> s : model.values()) {
            int before = s.size();
            s.removeIf(which);
            n += before - s.size();
        }
        return n;
    }

    private static void assertNoTrace(ChunkIndex index, Holder h) {
        assertEquals(0, index.keysOf(h).length, "reverse index of removed " + h);
        for (ChunkIndex.HolderEntries e : index.holders()) {
            assertFalse(e.holder().equals(h), "removed " + h + " still listed");
        }
    }

    /** Forward (key -> holders) equals the model; reverse (holder -> keys) is its exact transpose. */
    static void assertAgrees(ChunkIndex index, Map<Long, Set<Holder>> model) {
        long total = 0;
        Map<Holder, Set<Long>> reverse = new HashMap<>();
        for (Map.Entry<Long, Set<Holder>> e : model.entrySet()) {
            List<Holder> expected = new ArrayList<>(e.getValue());
            expected.sort(ChunkIndex.HOLDER_ORDER);
            assertEquals(expected, index.holdersOf(e.getKey()), "holders of " + e.getKey());
            total += expected.size();
            for (Holder h : expected) {
                reverse.computeIfAbsent(h, x -> new TreeSet<>()).add(e.getKey());
            }
        }
        assertEquals(total, index.entries(), "entries");
        Map<Holder, Long> listed = new HashMap<>();
        for (ChunkIndex.HolderEntries e : index.holders()) {
            listed.put(e.holder(), e.entries());
        }
        for (Map.Entry<Holder, Set<Long>> e : reverse.entrySet()) {
            long[] keys = index.keysOf(e.getKey());
            Arrays.sort(keys);
            assertEquals(e.getValue().stream().mapToLong(Long::longValue).sorted().boxed().toList(),
                    Arrays.stream(keys).boxed().toList(), "reverse index of " + e.getKey());
            assertEquals((long) e.getValue().size(), listed.getOrDefault(e.getKey(), 0L), "entries of " + e.getKey());
        }
        for (Map.Entry<Holder, Long> e : listed.entrySet()) {
            if (!reverse.containsKey(e.getKey())) {
                assertEquals(0L, e.getValue(), e.getKey() + " holds nothing in the model");
            }
        }
    }

    @Property(tries = 200)
    void longestPrefixIsPerInstanceAndContiguous(@ForAll @Size(max = 12) List<@net.jqwik.api.constraints.IntRange(max = 7) Integer> heldA,
                                                 @ForAll @Size(max = 12) List<@net.jqwik.api.constraints.IntRange(max = 7) Integer> heldB) {
        long[] keys = {11, 22, 33, 44, 55, 66, 77, 88};
        ChunkIndex index = new ChunkIndex();
        Holder a = new Holder("a", 0, "LocalDiskBackend");
        Holder b = new Holder("b", 1, "LocalCPUBackend");
        heldA.forEach(c -> index.admit(a, keys[c]));
        heldB.forEach(c -> index.admit(b, keys[c]));
        ChunkIndex.PrefixMatch m = index.longestPrefixes(keys, keys.length);
        int pa = contiguous(new HashSet<>(heldA));
        int pb = contiguous(new HashSet<>(heldB));
        Map<String, Integer> got = new HashMap<>();
        m.hits().forEach(h -> got.put(h.instanceId(), h.chunks()));
        Map<String, Integer> want = new HashMap<>();
        if (pa > 0) {
            want.put("a", pa);
        }
        if (pb > 0) {
            want.put("b", pb);
        }
        assertEquals(want, got);
        assertEquals(pa == 0 && pb == 0, m.best().isEmpty());
        m.best().ifPresent(best -> assertEquals(Math.max(pa, pb), best.chunks()));
    }

    private static int contiguous(Set<Integer> held) {
        int n = 0;
        while (held.contains(n)) {
            n++;
        }
        return n;
    }
}
