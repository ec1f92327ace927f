package lmcache4j.bench.allocator;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.allocator.AllocatorStats;
import lmcache4j.bench.allocator.BenchedAllocator.Kind;

/**
 * The allocator benchmark: replays one {@link AllocationTrace} against each allocator, {@code warmup}
 * times unmeasured and then {@code runs} times measured, and reports the median nanoseconds per
 * allocate+free pair.
 *
 * <p>What is measured, precisely:
 * <ul>
 *   <li><b>ns per pair</b> of a run (the headline): the steady phase, where the pool is held at the
 *       occupancy target with shuffled frees; its {@link System#nanoTime()} time over its pairs
 *       (it holds exactly as many frees as allocations). It is timed in {@value #STEADY_PIECES}
 *       pieces whose times are summed, so that allocator statistics can be read between pieces
 *       without being timed; the per-op loop itself reads no clock.</li>
 *   <li><b>whole ns per pair</b>: the whole replay (fill, steady phase, drain; fill and drain timed
 *       as one piece each) over all its pairs. Differs from the steady figure where filling an
 *       empty pool costs something else, as for Netty, which gets its chunks from the system.</li>
 *   <li><b>fragments max</b> (lmcache4j allocators): the largest {@code stats().fragmentCount()}
 *       (free blocks; free pages for the paged allocator) seen at the {@value #STEADY_PIECES}
 *       sample points of the steady phase (after each piece, the last at its end) over all
 *       measured runs.</li>
 *   <li><b>fragments, largest free block, occupancy at the end</b>: read at the end of the steady
 *       phase, before the drain, in the last measured run (the trace is deterministic, so every run
 *       places identically).</li>
 * </ul>
 * Each allocator is made once, used for every run (the trace frees everything it allocates), and
 * closed at the end; the lmcache4j allocators' close fails if anything leaked.
 */
public final class AllocatorBench {
    /** Pieces the steady phase is timed in; the statistics are sampled after each. */
    public static final int STEADY_PIECES = 16;

    private AllocatorBench() {
    }

    /**
     * What to run.
     *
     * @param trace      the trace to generate
     * @param runs       measured replays per allocator
     * @param warmup     unmeasured replays per allocator first
     * @param allocators the allocators, in order
     */
    public record Settings(AllocationTrace.Config trace, int runs, int warmup, List<Kind> allocators) {
        public static final int DEFAULT_RUNS = 7;
        public static final int DEFAULT_WARMUP = 2;

        public Settings {
            Objects.requireNonNull(trace, "trace");
            if (runs <= 0) {
                throw new IllegalArgumentException("runs must be positive, was " + runs);
            }
            if (warmup < 0) {
                throw new IllegalArgumentException("warmup runs must be >= 0, was " + warmup);
            }
            if (allocators.isEmpty()) {
                throw new IllegalArgumentException("no allocator to run");
            }
            allocators = List.copyOf(allocators);
        }
    }

    /**
     * One allocator's results.
     *
     * @param nsPerPair       each measured run's steady-phase ns per pair, in run order
     * @param wholeNsPerPair  each measured run's whole-replay ns per pair, in run order
     * @param fragmentsMax    the most free blocks sampled in the steady phase, or -1 where not reported
     * @param fragmentsEnd    free blocks at the end of the steady phase, or -1
     * @param largestFreeEnd  the largest free block at the end of the steady phase, or -1
     * @param occupancyEnd    used / capacity at the end of the steady phase, or NaN
     * @param footprintBytes  memory the allocator held at the end of the steady phase, or -1 if unknown
     * @param notes           what else the allocator reported after the replays, or empty
     */
    public record Result(Kind kind, String description, double[] nsPerPair, double[] wholeNsPerPair,
                         long fragmentsMax, long fragmentsEnd, long largestFreeEnd, double occupancyEnd,
                         long footprintBytes, String notes) {
        public double median() {
            return median(nsPerPair);
        }

        public double min() {
            return Arrays.stream(nsPerPair).min().orElseThrow();
        }

        public double max() {
            return Arrays.stream(nsPerPair).max().orElseThrow();
        }

        public double wholeMedian() {
            return median(wholeNsPerPair);
        }

        /** Whether the median meets the target; true where there is none. */
        public boolean meetsTarget() {
            return kind.targetNs().isEmpty() || median() <= kind.targetNs().getAsInt();
        }

        static double median(double[] values) {
            double[] sorted = values.clone();
            Arrays.sort(sorted);
            int n = sorted.length;
            return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        }
    }

    /** Everything a run produced. */
    public record Report(Settings settings, AllocationTrace trace, List<Result> results) {
        /** The result for {@code kind}, if it ran. */
        public Optional<Result> result(Kind kind) {
            return results.stream().filter(r -> r.kind() == kind).findFirst();
        }
    }

    /** Generates the trace and runs every allocator of {@code settings}, with progress lines on {@code progress}. */
    public static Report run(Settings settings, PrintStream progress) {
        long t0 = System.nanoTime();
        AllocationTrace trace = AllocationTrace.generate(settings.trace());
        progress.printf("allocator bench: trace generated in %.1f s: %s%n", (System.nanoTime() - t0) / 1e9, trace);
        List<Result> results = new ArrayList<>();
        for (Kind kind : settings.allocators()) {
            results.add(runOne(kind, trace, settings, progress));
        }
        return new Report(settings, trace, List.copyOf(results));
    }

    private static Result runOne(Kind kind, AllocationTrace trace, Settings settings, PrintStream progress) {
        double[] nsPerPair = new double[settings.runs()];
        double[] wholeNsPerPair = new double[settings.runs()];
        Sampler sampler = new Sampler();
        String description;
        String notes;
        try (BenchedAllocator allocator = BenchedAllocator.create(kind, trace)) {
            description = allocator.description();
            progress.printf("allocator bench: %s: %s%n", kind.key(), description);
            for (int w = 0; w < settings.warmup(); w++) {
                Timing t = replayOnce(allocator, trace, null);
                progress.printf("allocator bench: %-6s warmup %d/%d  %8.1f ns/pair (whole replay %.1f)%n", kind.key(),
                        w + 1, settings.warmup(), t.steadyNsPerPair(trace), t.wholeNsPerPair(trace));
            }
            // The trace's arrays (tens of MB) were made just before: without a full collection every
            // young collection during the runs copies them again, pausing 10 ms or more, and which runs
            // catch a pause decided the median. After it, young collections copy only what the
            // allocators keep live, so the runs still pay for the garbage an allocator makes.
            System.gc();
            for (int r = 0; r < settings.runs(); r++) {
                Timing t = replayOnce(allocator, trace, sampler);
                nsPerPair[r] = t.steadyNsPerPair(trace);
                wholeNsPerPair[r] = t.wholeNsPerPair(trace);
                progress.printf("allocator bench: %-6s run %d/%d     %8.1f ns/pair (whole replay %.1f)%n", kind.key(),
                        r + 1, settings.runs(), nsPerPair[r], wholeNsPerPair[r]);
            }
            notes = allocator.notes();
        }
        return new Result(kind, description, nsPerPair, wholeNsPerPair, sampler.fragmentsMax, sampler.fragmentsEnd,
                sampler.largestFreeEnd, sampler.occupancyEnd, sampler.footprintEnd, notes);
    }

    private record Timing(long totalNanos, long steadyNanos) {
        double wholeNsPerPair(AllocationTrace trace) {
            return (double) totalNanos / trace.pairs();
        }

        double steadyNsPerPair(AllocationTrace trace) {
            return (double) steadyNanos / trace.steadyPairs();
        }
    }

    /** One whole replay in pieces; {@code sampler} (when given) reads statistics between them, untimed. */
    private static Timing replayOnce(BenchedAllocator allocator, AllocationTrace trace, Sampler sampler) {
        long total = allocator.replay(0, trace.fillEnd());
        long steady = 0;
        int steadyOps = trace.steadyEnd() - trace.fillEnd();
        for (int p = 0; p < STEADY_PIECES; p++) {
            int from = trace.fillEnd() + (int) ((long) steadyOps * p / STEADY_PIECES);
            int to = trace.fillEnd() + (int) ((long) steadyOps * (p + 1) / STEADY_PIECES);
            long nanos = allocator.replay(from, to);
            steady += nanos;
            if (sampler != null) {
                sampler.sample(allocator, p == STEADY_PIECES - 1);
            }
        }
        total += steady;
        total += allocator.replay(trace.steadyEnd(), trace.length());
        return new Timing(total, steady);
    }

    private static final class Sampler {
        long fragmentsMax = -1;
        long fragmentsEnd = -1;
        long largestFreeEnd = -1;
        double occupancyEnd = Double.NaN;
        long footprintEnd = -1;

        void sample(BenchedAllocator allocator, boolean end) {
            Optional<AllocatorStats> stats = allocator.stats();
            stats.ifPresent(s -> fragmentsMax = Math.max(fragmentsMax, s.fragmentCount()));
            if (end) {
                footprintEnd = allocator.footprintBytes();
                stats.ifPresent(s -> {
                    fragmentsEnd = s.fragmentCount();
                    largestFreeEnd = s.largestFreeBlock();
                    occupancyEnd = (double) s.usedBytes() / s.capacityBytes();
                });
            }
        }
    }
}
