package lmcache4j.bench.trace;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import lmcache4j.bench.internal.BenchFiles;

/**
 * {@code bench trace}: every policy at every capacity replayed through the engine's tiers
 * ({@link EngineReplay}), against Belady's MIN ({@link Belady}) and the infinite cache, and the
 * replay's speed against a plain {@link java.util.LinkedHashMap} LRU of the same accesses.
 */
public final class TraceSweep {
    /** The policies swept by default: LMCache's, vLLM's ARC, and lmcache4j's own. */
    public static final List<String> DEFAULT_POLICIES = List.of("LRU", "LFU", "FIFO", "MRU", "S3FIFO", "ARC", "KV_ADAPTIVE");
    /** Timed repetitions of the speed measurement (median). */
    static final int SPEED_RUNS = 3;

    /**
     * @param trace       the trace
     * @param policies    {@code cache_policy} names
     * @param capacities  the CPU tier's capacities
     * @param chunkTokens tokens per chunk (the block size, or a divisor)
     * @param mode        metadata only or real bytes
     * @param model       the KV shape for capacities in bytes and the GB column
     * @param disk        the disk tier's capacity, or null for none
     * @param diskDir     where a disk tier's files go (a temporary directory inside it), or null for the system's
     */
    public record Settings(Trace trace, List<String> policies, List<Capacity> capacities, int chunkTokens,
                           EngineReplay.Mode mode, ModelShape model, Capacity disk, Path diskDir) {
        public Settings {
            Objects.requireNonNull(trace, "trace");
            policies = List.copyOf(policies);
            capacities = List.copyOf(capacities);
            Objects.requireNonNull(mode, "mode");
            Objects.requireNonNull(model, "model");
            if (policies.isEmpty() || capacities.isEmpty()) {
                throw new IllegalArgumentException("a sweep needs at least one policy and one capacity");
            }
        }
    }

    /** One policy's replay at one capacity. */
    public record PolicyResult(String policy, long hitChunks, long hitBlocks, long diskHitChunks, double seconds) {
    }

    /** One capacity: its size, the references, and each policy. */
    public record Point(Capacity capacity, int blocks, int chunks, long beladyChunks, long lruCurveChunks,
                        List<PolicyResult> results) {
    }

    /** Replay speed: chunk operations per second through the tiers and on a plain map, same accesses, same run. */
    public record Speed(String policy, int chunks, long chunkOps, double replaySeconds, double hashMapSeconds) {
        public double replayOpsPerSecond() {
            return chunkOps / replaySeconds;
        }

        public double hashMapOpsPerSecond() {
            return chunkOps / hashMapSeconds;
        }
    }

    /** The sweep's results. */
    public record Report(Settings settings, int chunksPerBlock, long requests, long fullBlockAccesses, long chunkAccesses,
                         long inputTokens, int distinctFullBlocks, long infiniteChunks, int diskChunks, List<Point> points,
                         Speed speed) {
        /** Hit rate in blocks of {@code r}: hit blocks over full-block lookups. */
        public double blockRate(PolicyResult r) {
            return (double) r.hitBlocks() / fullBlockAccesses;
        }

        /** Hit rate in tokens of {@code r}: hit tokens over all prompt tokens (partial blocks included). */
        public double tokenRate(PolicyResult r) {
            return (double) r.hitChunks() * settings.chunkTokens() / inputTokens;
        }

        /** Hits in chunks over all chunk lookups, for a count of hit chunks. */
        public double chunkRate(long chunks) {
            return (double) chunks / chunkAccesses;
        }
    }

    private TraceSweep() {
    }

    public static Report run(Settings s, PrintStream progress) {
        Trace trace = s.trace();
        ChunkTrace chunks = ChunkTrace.of(trace, s.chunkTokens());
        int distinct = trace.distinctFullBlocks();
        long infinite = chunks.infiniteHits();
        progress.printf("trace: %s: %,d requests, %,d full-block lookups, %,d distinct full blocks; computing LRU's curve%n",
                trace.source(), trace.requests().size(), trace.fullBlockAccesses(), distinct);
        LruCurve curve = LruCurve.of(chunks);
        int diskChunks = s.disk() == null ? 0 : s.disk().blocks(trace, distinct, s.model()) * chunks.chunksPerBlock;
        Path diskRoot = null;
        List<Point> points = new ArrayList<>();
        try {
            if (diskChunks > 0) {
                diskRoot = s.diskDir() == null ? Files.createTempDirectory("trace-disk") : Files.createTempDirectory(s.diskDir(), "trace-disk");
            }
            int n = 0;
            for (Capacity c : s.capacities()) {
                int blocks = c.blocks(trace, distinct, s.model());
                int cpuChunks = Math.multiplyExact(blocks, chunks.chunksPerBlock);
                long belady = Belady.hits(chunks, cpuChunks);
                List<PolicyResult> results = new ArrayList<>();
                for (String policy : s.policies()) {
                    progress.printf("[%d/%d] %s at %s (%,d blocks) ...%n", ++n, s.capacities().size() * s.policies().size(),
                            policy, c.text(), blocks);
                    Path dir = diskRoot == null ? null : Files.createTempDirectory(diskRoot, "replay");
                    results.add(replay(trace, new EngineReplay.Settings(policy, cpuChunks, s.chunkTokens(), s.mode(),
                            diskChunks, dir)));
                    if (dir != null) {
                        BenchFiles.deleteTree(dir);
                    }
                }
                points.add(new Point(c, blocks, cpuChunks, belady, curve.hits(cpuChunks), List.copyOf(results)));
            }
            Speed speed = speed(trace, chunks, s, points.get(speedPoint(s.capacities())).chunks());
            return new Report(s, chunks.chunksPerBlock, trace.requests().size(), trace.fullBlockAccesses(),
                    chunks.chunks.length, trace.inputTokens(), distinct, infinite, diskChunks, List.copyOf(points), speed);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot make the disk tier's directory: " + e.getMessage(), e);
        } finally {
            if (diskRoot != null) {
                BenchFiles.deleteTree(diskRoot);
            }
        }
    }

    /** Replays the whole trace with one policy; sums the hits. */
    static PolicyResult replay(Trace trace, EngineReplay.Settings settings) {
        long t0 = System.nanoTime();
        long chunks = 0;
        long blocks = 0;
        long disk = 0;
        try (EngineReplay replay = new EngineReplay(trace, settings)) {
            for (Trace.Request r : trace.requests()) {
                EngineReplay.Hits h = replay.replay(r);
                chunks += h.chunks();
                blocks += h.chunks() / replay.chunksPerBlock();
                disk += h.diskChunks();
            }
            replay.memcheck();
        }
        return new PolicyResult(settings.policy(), chunks, blocks, disk, (System.nanoTime() - t0) / 1e9);
    }

    /** The capacity the speed is measured at: Mooncake's 3M tokens when swept, else the first. */
    private static int speedPoint(List<Capacity> capacities) {
        for (int i = 0; i < capacities.size(); i++) {
            if (capacities.get(i).text().equalsIgnoreCase("3Mt")) {
                return i;
            }
        }
        return 0;
    }

    /** The metadata replay of the whole trace with LRU against the plain map, each {@value #SPEED_RUNS} times (median). */
    private static Speed speed(Trace trace, ChunkTrace chunks, Settings s, int capacity) {
        double[] replay = new double[SPEED_RUNS];
        double[] map = new double[SPEED_RUNS];
        long ops = 0;
        long sink = 0;
        for (int run = 0; run < SPEED_RUNS; run++) {
            try (EngineReplay r = new EngineReplay(trace, EngineReplay.Settings.cpu("LRU", capacity, s.chunkTokens(),
                    EngineReplay.Mode.METADATA))) {
                long t0 = System.nanoTime();
                for (Trace.Request req : trace.requests()) {
                    sink += r.replay(req).chunks();
                }
                replay[run] = (System.nanoTime() - t0) / 1e9;
                ops = r.chunkOps();
            }
            long t0 = System.nanoTime();
            sink += HashMapLru.replay(chunks, capacity);
            map[run] = (System.nanoTime() - t0) / 1e9;
        }
        if (sink < 0) {
            throw new AssertionError(); // keeps the work observable
        }
        return new Speed("LRU", capacity, ops, median(replay), median(map));
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v[v.length / 2];
    }
}
