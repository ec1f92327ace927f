package lmcache4j.bench.trace;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalDouble;

/**
 * {@code plan}: how much cache a workload needs. From one trace: LRU's hit rate at every capacity
 * in one pass ({@link LruCurve}), the other policies and Belady's MIN at sample capacities (replays
 * through the engine's tiers, {@link EngineReplay}, and {@link Belady}), the infinite cache, and the
 * capacities that reach given fractions of the infinite cache's hits. One chunk per block.
 */
public final class CapacityPlan {
    /** The policies replayed at the samples by default (LRU comes from its curve). */
    public static final List<String> DEFAULT_POLICIES = List.of("KV_ADAPTIVE", "ARC", "S3FIFO");
    /** The sample capacities by default. */
    public static final String DEFAULT_SAMPLES = "1%,2%,5%,10%,20%,30%,50%";
    /** The fractions of the infinite cache's hits an operator asks about. */
    public static final List<Double> TARGETS = List.of(0.5, 0.8, 0.9);

    /**
     * @param trace    the workload
     * @param model    the KV shape, for GB
     * @param policies {@code cache_policy} names replayed at the samples
     * @param samples  capacities to replay at
     */
    public record Settings(Trace trace, ModelShape model, List<String> policies, List<Capacity> samples) {
        public Settings {
            Objects.requireNonNull(trace, "trace");
            Objects.requireNonNull(model, "model");
            policies = List.copyOf(policies);
            samples = List.copyOf(samples);
            if (samples.isEmpty()) {
                throw new IllegalArgumentException("a plan needs at least one sample capacity");
            }
        }
    }

    /** Hits at one sample capacity: Belady's and each policy's (in {@link Settings#policies()} order). */
    public record Sample(int blocks, long belady, List<Long> policies) {
    }

    /**
     * The capacity that reaches {@code fraction} of the infinite cache's hits.
     *
     * @param lruBlocks      LRU's, exact (from the one-pass curve)
     * @param policyBlocks   each policy's, interpolated between the samples (log capacity); empty when
     *                       no sample reaches it
     * @param beladyBlocks   Belady's (the least any policy can need), interpolated likewise
     */
    public record Target(double fraction, long hits, long lruBlocks, List<OptionalDouble> policyBlocks,
                         OptionalDouble beladyBlocks) {
    }

    /** The plan's numbers. */
    public record Plan(Settings settings, long lookups, int distinctBlocks, long infinite, LruCurve lru,
                       List<Sample> samples, List<Target> targets) {
        /** Hit rate of {@code hits} chunk hits: hits over full-chunk lookups. */
        public double rate(long hits) {
            return (double) hits / lookups;
        }

        /** GB (10^9 bytes) of KV {@code blocks} blocks take. */
        public double gigabytes(double blocks) {
            return blocks * settings.trace().blockTokens() * settings.model().bytesPerToken() / 1e9;
        }
    }

    private CapacityPlan() {
    }

    public static Plan run(Settings s, PrintStream progress) {
        Trace trace = s.trace();
        ChunkTrace chunks = ChunkTrace.of(trace, trace.blockTokens());
        int distinct = trace.distinctFullBlocks();
        progress.printf("plan: %s: %,d requests, %,d distinct full blocks; LRU's curve in one pass%n", trace.source(),
                trace.requests().size(), distinct);
        LruCurve lru = LruCurve.of(chunks);
        long infinite = chunks.infiniteHits();
        Map<Integer, Sample> byBlocks = new LinkedHashMap<>();
        int n = 0;
        for (Capacity c : s.samples()) {
            int blocks = Math.min(c.blocks(trace, distinct, s.model()), distinct);
            if (byBlocks.containsKey(blocks)) {
                continue;
            }
            List<Long> hits = new ArrayList<>();
            for (String policy : s.policies()) {
                progress.printf("[%d/%d] %s at %s (%,d blocks) ...%n", ++n, s.samples().size() * s.policies().size(),
                        policy, c.text(), blocks);
                hits.add(TraceSweep.replay(trace, EngineReplay.Settings.cpu(policy, blocks, trace.blockTokens(),
                        EngineReplay.Mode.METADATA)).hitChunks());
            }
            byBlocks.put(blocks, new Sample(blocks, Belady.hits(chunks, blocks), List.copyOf(hits)));
        }
        List<Sample> samples = byBlocks.values().stream().sorted((a, b) -> Integer.compare(a.blocks(), b.blocks())).toList();
        List<Target> targets = new ArrayList<>();
        for (double f : TARGETS) {
            long goal = (long) Math.ceil(f * infinite);
            List<OptionalDouble> policies = new ArrayList<>();
            for (int p = 0; p < s.policies().size(); p++) {
                int index = p;
                policies.add(interpolate(samples, goal, sample -> sample.policies().get(index)));
            }
            targets.add(new Target(f, goal, lru.capacityFor(goal), List.copyOf(policies),
                    interpolate(samples, goal, Sample::belady)));
        }
        return new Plan(s, chunks.chunks.length, distinct, infinite, lru, samples, List.copyOf(targets));
    }

    /**
     * The capacity where {@code hits} first reaches {@code goal}, between the two samples around it,
     * linear in the logarithm of the capacity (from the origin below the first sample); empty when no
     * sample reaches it.
     */
    static OptionalDouble interpolate(List<Sample> samples, long goal, java.util.function.ToLongFunction<Sample> hits) {
        double prevBlocks = 0;
        long prevHits = 0;
        for (Sample s : samples) {
            long h = hits.applyAsLong(s);
            if (h >= goal) {
                if (prevBlocks == 0 || h == prevHits) {
                    return OptionalDouble.of(prevBlocks == 0 ? s.blocks() * (double) goal / Math.max(1, h) : s.blocks());
                }
                double t = (double) (goal - prevHits) / (h - prevHits);
                return OptionalDouble.of(Math.exp(Math.log(prevBlocks) + t * (Math.log(s.blocks()) - Math.log(prevBlocks))));
            }
            prevBlocks = s.blocks();
            prevHits = h;
        }
        return OptionalDouble.empty();
    }
}
