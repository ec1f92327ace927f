package lmcache4j.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.ActionChainArbitrary;
import net.jqwik.api.state.Transformer;

/**
 * A stateful model-based test of any {@link MemoryAllocator}: jqwik action chains of allocate,
 * batched allocate, retain, release, batched release, pin, unpin, and illegal actions (double
 * release, over-unpin, release through the wrong allocator) that must be refused without changing
 * anything. After every action: no two live objects overlap, every offset is aligned, used + free
 * = capacity, counts never go negative, {@link MemoryAllocator#memcheck()} holds, and every
 * placement equals the {@link PlacementOracle}'s (when one is given: a lazily growing pool's
 * placements depend on the timing of its background growth).
 */
public final class AllocatorHarness {
    /** One live object and the counts the test holds on it. */
    static final class Held {
        final MemoryObj obj;
        int refs = 1;
        int pins;

        Held(MemoryObj obj) {
            this.obj = obj;
        }
    }

    private final MemoryAllocator allocator;
    private final MemoryAllocator foreign;
    private final PlacementOracle oracle;
    private final long alignment;
    private final long physicalUnit;
    private final List<Held> live = new ArrayList<>();
    private final List<MemoryObj> dead = new ArrayList<>();
    private long expectedPinned;

    /**
     * @param physicalUnit for a paged allocator the page size (every object reserves one page); 0
     *                     when objects reserve their size rounded up to {@code alignment}
     * @param foreign      another allocator, for wrong-owner actions
     */
    public AllocatorHarness(MemoryAllocator allocator, MemoryAllocator foreign, PlacementOracle oracle,
                            long alignment, long physicalUnit) {
        this.allocator = allocator;
        this.foreign = foreign;
        this.oracle = oracle;
        this.alignment = alignment;
        this.physicalUnit = physicalUnit;
    }

    /** Chunk shapes of two small "models": [2, layers, tokens, hidden] of bfloat16. */
    static TensorShape chunk(int model, int tokens) {
        return model == 0 ? TensorShape.of(2, 2, tokens, 64) : TensorShape.of(2, 3, tokens, 128);
    }

    static Arbitrary<TensorShape> chunkShapes() {
        Arbitrary<Integer> tokens = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(6, Arbitraries.just(256)),
                net.jqwik.api.Tuple.of(2, Arbitraries.just(128)),
                net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(1, 256)));
        return net.jqwik.api.Combinators.combine(Arbitraries.integers().between(0, 1), tokens).as(AllocatorHarness::chunk);
    }

    private long physical(TensorShape shape) {
        if (physicalUnit > 0) {
            return physicalUnit;
        }
        long raw = shape.byteSize(DType.BFLOAT16);
        return (raw + alignment - 1) & -alignment;
    }

    // ---- actions ----------------------------------------------------------------------------

    void allocate(TensorShape shape) {
        long expected = oracle == null ? -2 : oracle.allocate(physical(shape));
        Optional<MemoryObj> obj = allocator.allocate(shape, DType.BFLOAT16, MemoryFormat.KV_2LTD);
        if (oracle != null) {
            assertEquals(expected >= 0, obj.isPresent(), "allocation success differs from the model for " + shape);
        }
        obj.ifPresent(o -> {
            if (oracle != null) {
                assertEquals(expected, o.address(), "first-fit placement differs from the model");
            }
            assertEquals(shape.byteSize(DType.BFLOAT16), o.byteSize());
            fill(o);
            live.add(new Held(o));
        });
    }

    void allocateBatch(TensorShape shape, int count) {
        long[] expected = new long[count];
        boolean fits = oracle != null && oracle.allocateBatch(physical(shape), count, expected);
        Optional<List<MemoryObj>> objs = allocator.allocateBatch(shape, DType.BFLOAT16, MemoryFormat.KV_2LTD, count);
        if (oracle != null) {
            assertEquals(fits, objs.isPresent(), "batch success differs from the model");
        }
        objs.ifPresent(list -> {
            assertEquals(count, list.size());
            if (oracle == null) {
                // placements depend on background growth timing: only the invariants are checked
            } else if (physicalUnit == 0) {
                for (int i = 0; i < count; i++) {
                    assertEquals(expected[i], list.get(i).address(), "batch slot " + i + " differs from the model");
                }
            } else {
                assertEquals(sorted(expected), list.stream().map(MemoryObj::address).sorted().toList());
            }
            list.forEach(o -> {
                fill(o);
                live.add(new Held(o));
            });
        });
    }

    private static List<Long> sorted(long[] values) {
        List<Long> list = new ArrayList<>();
        for (long v : values) {
            list.add(v);
        }
        list.sort(Comparator.naturalOrder());
        return list;
    }

    void retain(int index) {
        Held h = live.get(index);
        h.obj.retain();
        h.refs++;
    }

    void release(int index) {
        Held h = live.get(index);
        boolean freed = h.obj.release();
        h.refs--;
        settle(h, freed);
    }

    void pin(int index) {
        Held h = live.get(index);
        h.obj.pin();
        if (h.pins++ == 0) {
            expectedPinned++;
        }
    }

    void unpin(int index) {
        Held h = live.get(index);
        boolean freed = h.obj.unpin();
        if (--h.pins == 0) {
            expectedPinned--;
        }
        settle(h, freed);
    }

    /** Drops one reference of every other live object with references, in one batched call. */
    void releaseEveryOther(int offset) {
        List<Held> chosen = new ArrayList<>();
        for (int i = offset % 2; i < live.size(); i += 2) {
            if (live.get(i).refs > 0) {
                chosen.add(live.get(i));
            }
        }
        allocator.releaseAll(chosen.stream().map(h -> h.obj).toList());
        for (Held h : chosen) {
            h.refs--;
            settle(h, h.refs == 0 && h.pins == 0);
        }
    }

    void releaseDead(int index) {
        MemoryObj obj = dead.get(index);
        assertThrows(MemoryObjMisuseException.class, obj::release);
        assertThrows(MemoryObjMisuseException.class, obj::pin);
        assertThrows(MemoryObjMisuseException.class, obj::segment);
        assertThrows(MemoryObjMisuseException.class, () -> allocator.releaseAll(List.of(obj)));
    }

    void overUnpin(int index) {
        Held h = live.get(index);
        if (h.pins == 0) {
            assertThrows(MemoryObjMisuseException.class, h.obj::unpin);
        }
        if (h.refs == 0) {
            assertThrows(MemoryObjMisuseException.class, h.obj::release);
        }
    }

    void releaseThroughWrongAllocator(int index) {
        Held h = live.get(index);
        assertThrows(MemoryObjMisuseException.class, () -> foreign.releaseAll(List.of(h.obj)));
    }

    private void settle(Held h, boolean freed) {
        assertEquals(h.refs == 0 && h.pins == 0, freed, "memory must go back exactly when both counts reach zero");
        assertEquals(h.refs, h.obj.refCount());
        assertEquals(h.pins, h.obj.pinCount());
        if (freed) {
            live.remove(h);
            dead.add(h.obj);
            if (oracle != null) {
                oracle.free(h.obj.address(), h.obj.physicalSize());
            }
            if (dead.size() > 50) {
                dead.removeFirst();
            }
        }
    }

    /** Writes the object's id into its first and last bytes, so an overlap would show as a mismatch. */
    private static void fill(MemoryObj obj) {
        obj.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0, obj.id());
        obj.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, obj.byteSize() - 8, obj.id());
    }

    // ---- invariants -------------------------------------------------------------------------

    void checkInvariants() {
        allocator.memcheck();
        AllocatorStats s = allocator.stats();
        assertEquals(s.capacityBytes(), s.usedBytes() + s.freeBytes(), "used + free = capacity");
        assertEquals(live.size(), s.liveObjects());
        assertEquals(expectedPinned, s.pinnedObjects());
        List<MemoryObj> byAddress = live.stream().map(h -> h.obj).sorted(Comparator.comparingLong(MemoryObj::address)).toList();
        long used = 0;
        for (int i = 0; i < byAddress.size(); i++) {
            MemoryObj o = byAddress.get(i);
            assertEquals(0, o.address() % alignment, () -> o + " is not aligned to " + alignment);
            assertTrue(o.refCount() >= 0 && o.pinCount() >= 0);
            assertTrue(o.isValid());
            assertEquals(o.id(), o.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0), () -> o + " was overwritten");
            assertEquals(o.id(), o.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, o.byteSize() - 8),
                    () -> o + " was overwritten");
            if (i > 0) {
                MemoryObj prev = byAddress.get(i - 1);
                assertTrue(prev.address() + prev.physicalSize() <= o.address(), () -> prev + " overlaps " + o);
            }
            used += o.physicalSize();
        }
        assertEquals(used, s.usedBytes());
    }

    /** Releases everything still held, then closes both allocators (which proves no leak). */
    void drainAndClose() {
        for (Held h : List.copyOf(live)) {
            while (h.pins > 0) {
                unpin(live.indexOf(h));
            }
            while (h.refs > 0) {
                release(live.indexOf(h));
            }
        }
        checkInvariants();
        allocator.close();
        foreign.close();
    }

    // ---- the chain --------------------------------------------------------------------------

    /** Action chains over a harness made by {@code factory}. */
    public static ActionChainArbitrary<AllocatorHarness> chains(java.util.function.Supplier<AllocatorHarness> factory) {
        return ActionChain.<AllocatorHarness>startWith(factory)
                .withAction(6, (Action.Independent<AllocatorHarness>) () -> chunkShapes()
                        .map(s -> Transformer.mutate("allocate " + s, h -> h.allocate(s))))
                .withAction(2, (Action.Independent<AllocatorHarness>) () -> net.jqwik.api.Combinators
                        .combine(chunkShapes(), Arbitraries.integers().between(1, 6))
                        .as((s, n) -> Transformer.<AllocatorHarness>mutate("allocateBatch " + n + " × " + s, h -> h.allocateBatch(s, n))))
                .withAction(5, onLive("release", AllocatorHarness::release, h -> h.refs > 0))
                .withAction(2, onLive("retain", AllocatorHarness::retain, h -> h.refs > 0))
                .withAction(2, onLive("pin", AllocatorHarness::pin, h -> true))
                .withAction(2, onLive("unpin", AllocatorHarness::unpin, h -> h.pins > 0))
                .withAction(1, (Action.Independent<AllocatorHarness>) () -> Arbitraries.integers().between(0, 1)
                        .map(o -> Transformer.mutate("releaseAll every other from " + o, h -> h.releaseEveryOther(o))))
                .withAction(1, (Action.Independent<AllocatorHarness>) () -> picks()
                        .map(p -> Transformer.mutate("misuse a released object (pick " + p + ")", h -> {
                            if (!h.dead.isEmpty()) {
                                h.releaseDead(p % h.dead.size());
                            }
                        })))
                .withAction(1, onLive("over-unpin", AllocatorHarness::overUnpin, h -> true))
                .withAction(1, onLive("release through the wrong allocator", AllocatorHarness::releaseThroughWrongAllocator, h -> true))
                .withMaxTransformations(120);
    }

    private interface IndexOp {
        void apply(AllocatorHarness h, int index);
    }

    private static Arbitrary<Integer> picks() {
        return Arbitraries.integers().between(0, Integer.MAX_VALUE);
    }

    /**
     * An action on one live object that {@code eligible} accepts, chosen by a random pick when the
     * action runs. Actions are independent lambdas on purpose: jqwik calls an overridden
     * {@code precondition} reflectively, which module encapsulation forbids for test classes in a
     * package without tests of its own.
     */
    private static Action.Independent<AllocatorHarness> onLive(String what, IndexOp op, java.util.function.Predicate<Held> eligible) {
        return () -> picks().map(p -> Transformer.mutate(what + " (pick " + p + ")", h -> {
            List<Integer> candidates = new ArrayList<>();
            for (int i = 0; i < h.live.size(); i++) {
                if (eligible.test(h.live.get(i))) {
                    candidates.add(i);
                }
            }
            if (!candidates.isEmpty()) {
                op.apply(h, candidates.get(p % candidates.size()));
            }
        }));
    }

    /** Runs {@code chain} checking the invariants after every action, then drains and closes. */
    public static void run(ActionChain<AllocatorHarness> chain) {
        AllocatorHarness last = chain.withInvariant("allocator invariants", AllocatorHarness::checkInvariants).run();
        last.drainAndClose();
    }
}
