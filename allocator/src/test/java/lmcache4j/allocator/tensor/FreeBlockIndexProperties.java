package lmcache4j.allocator.tensor;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.RandomDistribution;
import net.jqwik.api.Tuple;

import lmcache4j.allocator.tensor.internal.FreeBlockIndex;

/**
 * Differential properties: {@link FreeBlockIndex} must choose exactly the offsets that LMCache's
 * linear free list ({@link LinearFirstFitModel}) chooses, for any sequence of operations. Tries
 * come from {@code jqwik.tries.default}, so the build decides how hard to look.
 */
class FreeBlockIndexProperties {
    private static final long PAGE = 4096;
    private static final long MIB = 1 << 20;
    private static final long CAPACITY = 64 * MIB;
    /** KV chunk sizes a pool sees again and again; an odd one makes misaligned leftovers. */
    private static final List<Long> CHUNKS = List.of(48 * 1024L, 256 * 1024L, MIB, 2 * MIB + 3 * PAGE);

    /** One step applied to both implementations through the harness. */
    sealed interface Op {
        void applyTo(DifferentialHarness h);
    }

    record Allocate(long size) implements Op {
        public void applyTo(DifferentialHarness h) {
            h.allocate(size);
        }
    }

    record Batch(long unit, int count) implements Op {
        public void applyTo(DifferentialHarness h) {
            h.allocateBatch(unit, count);
        }
    }

    record FreeOne(int pick) implements Op {
        public void applyTo(DifferentialHarness h) {
            h.freeOne(pick);
        }
    }

    record FreeSome(long seed) implements Op {
        public void applyTo(DifferentialHarness h) {
            h.freeSome(seed);
        }
    }

    record Grow(long size) implements Op {
        public void applyTo(DifferentialHarness h) {
            h.grow(size);
        }
    }

    /** A boundary anywhere, not just at the end: splits free blocks and later frees that span it. */
    record Boundary(long pages) implements Op {
        public void applyTo(DifferentialHarness h) {
            h.addBoundary(pages * PAGE);
        }
    }

    record DoubleFree(int pick, long length) implements Op {
        public void applyTo(DifferentialHarness h) {
            h.doubleFree(pick, length);
        }
    }

    @Property
    void theIndexMakesTheSameDecisionsAsLmcachesLinearFreeList(@ForAll("operations") List<Op> ops) {
        DifferentialHarness h = new DifferentialHarness(CAPACITY);
        for (Op op : ops) {
            op.applyTo(h);
            h.checkAll();
        }
    }

    @Property
    void thousandsOfFragmentsStillGiveTheSameDecisions(@ForAll long seed, @ForAll("fewerOperations") List<Op> ops) {
        DifferentialHarness h = new DifferentialHarness(CAPACITY);
        h.fragment(seed, PAGE, 2);
        h.checkAll();
        assertTrue(h.freeBlockCount() >= 1000, () -> "only " + h.freeBlockCount() + " fragments");
        int step = 0;
        for (Op op : ops) {
            op.applyTo(h);
            // Return values are compared on every step; whole-state comparisons are O(fragments).
            h.checkSummary();
            if (++step % 10 == 0) {
                h.checkAll();
            }
        }
        h.checkAll();
    }

    @Provide
    Arbitrary<List<Op>> operations() {
        // Uniform lengths: jqwik's default favours short lists, and long runs are where fragments build up.
        return op().list().ofMaxSize(200).withSizeDistribution(RandomDistribution.uniform());
    }

    @Provide
    Arbitrary<List<Op>> fewerOperations() {
        return op().list().ofMaxSize(60).withSizeDistribution(RandomDistribution.uniform());
    }

    private static Arbitrary<Op> op() {
        return Arbitraries.frequencyOf(
                Tuple.of(35, size().map(Allocate::new)),
                Tuple.of(12, Combinators.combine(unit(), Arbitraries.integers().between(1, 32)).as(Batch::new)),
                Tuple.of(30, Arbitraries.integers().greaterOrEqual(0).map(FreeOne::new)),
                Tuple.of(6, Arbitraries.longs().map(FreeSome::new)),
                Tuple.of(3, pages(1, 4096).map(Grow::new)),
                Tuple.of(2, Arbitraries.longs().between(1, CAPACITY / PAGE).map(Boundary::new)),
                Tuple.of(4, Combinators.combine(Arbitraries.integers().greaterOrEqual(0), pages(1, 64)).as(DoubleFree::new)));
    }

    /** Mostly chunk sizes, sometimes any page multiple, rarely more than the whole pool. */
    private static Arbitrary<Long> size() {
        return Arbitraries.frequencyOf(
                Tuple.of(6, Arbitraries.of(CHUNKS)),
                Tuple.of(3, pages(1, 1024)),
                Tuple.of(1, pages(1, 2 * CAPACITY / PAGE)));
    }

    private static Arbitrary<Long> unit() {
        return Arbitraries.frequencyOf(
                Tuple.of(3, Arbitraries.of(CHUNKS)),
                Tuple.of(2, pages(1, 64)));
    }

    private static Arbitrary<Long> pages(long min, long max) {
        return Arbitraries.longs().between(min, max).map(p -> p * PAGE);
    }
}
