package lmcache4j.bench.jmh;

import java.util.concurrent.TimeUnit;

import lmcache4j.bench.allocator.AllocationTrace;
import lmcache4j.bench.allocator.BenchedAllocator;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * JMH version of the allocator benchmark: each invocation replays the steady phase of the
 * {@link AllocationTrace} (the pool held at ~80% occupancy, shuffled frees) against one allocator;
 * the fill before it and the drain after it run in per-invocation setup and teardown, untimed.
 * The primary score is ns per steady phase; the secondary {@code pairs} score, from an
 * {@link AuxCounters} counter, is ns per allocate+free pair, the number to compare with
 * {@code ./lmcache4j bench allocator}.
 *
 * <pre>./lmcache4j bench jmh AllocatorJmh -f 1 -wi 1 -i 2 -w 1s -r 1s</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class AllocatorJmh {

    /** tensor, paged, netty or malloc. */
    @Param({"tensor", "paged", "netty", "malloc"})
    public String allocator;

    /** Allocate+free pairs in the trace's steady phase; an invocation replays all of it. */
    @Param({"100000"})
    public int ops;

    @Param({"42"})
    public long seed;

    private AllocationTrace trace;
    private BenchedAllocator target;

    /** Counts allocate+free pairs, so JMH reports the time per pair next to the time per replay. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Pairs {
        public long pairs;

        @Setup(Level.Iteration)
        public void reset() {
            pairs = 0;
        }
    }

    @Setup(Level.Trial)
    public void setUp() {
        trace = AllocationTrace.generate(AllocationTrace.Config.of(seed, ops));
        target = BenchedAllocator.create(BenchedAllocator.Kind.fromKey(allocator), trace);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        target.close();
    }

    /** Fills the pool to the occupancy target (untimed; invocations last tens of milliseconds). */
    @Setup(Level.Invocation)
    public void fill() {
        target.replay(0, trace.fillEnd());
    }

    /** Frees what the steady phase left (untimed), so every invocation starts from an empty pool. */
    @TearDown(Level.Invocation)
    public void drain() {
        target.replay(trace.steadyEnd(), trace.length());
    }

    /** The steady phase; returns the replay's own nanoTime so that nothing is dead code. */
    @Benchmark
    public long steady(Pairs counter) {
        long nanos = target.replay(trace.fillEnd(), trace.steadyEnd());
        counter.pairs += trace.steadyPairs();
        return nanos;
    }
}
