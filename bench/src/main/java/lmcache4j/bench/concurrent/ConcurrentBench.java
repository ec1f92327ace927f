package lmcache4j.bench.concurrent;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.bench.demo.KvModel;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.metrics.MetricsSnapshot;

/**
 * Throughput of one engine under concurrent requests: N threads, each repeating one request's
 * {@code lookup → retrieve → store} as a serving engine's scheduler and workers do, for N in
 * {@link Settings#threadCounts()} (more threads than cores on purpose: serving engines run many
 * requests at once).
 *
 * <p>A request's tokens are {@code sharedChunks} chunks every thread shares (a system prompt),
 * then {@code distinctChunks} chunks of the thread's own (its conversation so far), then one fresh
 * chunk never seen before (the new turn). So each operation hits the shared and distinct prefix in
 * the CPU tier (lookup pins it, retrieve scatters it into the thread's own slots of one paged cache
 * and unpins; before each N the shared and distinct chunks are stored again where LRU evicted them)
 * and the store gathers and keeps the fresh chunk, evicting old fresh chunks by LRU
 * once the tier is full. The work per operation does not depend on N, so ops/s against N shows how
 * the engine scales, and the CPU tier lock's counters (from the engine's metrics) show what waiting
 * for it costs.
 *
 * <p>Before the runs the shared and distinct chunks are stored from KV computed by
 * {@link KvModel}; after them every thread's slots hold what its last retrieve loaded, which is
 * verified against the model (fresh chunks are stored from whatever the slots hold and never read
 * back, so they are not verified).
 */
public final class ConcurrentBench {
    static final DType DTYPE = DType.BFLOAT16;
    static final PagedLayout LAYOUT = PagedLayout.FLASH_ATTENTION;

    /**
     * @param threadCounts   the N to measure, in order
     * @param warmupMillis   unmeasured time at each N first
     * @param millis         measured time at each N
     * @param layers         attention layers
     * @param kvHeads        KV heads
     * @param headSize       elements per head
     * @param blockSize      tokens per paged-cache block
     * @param chunkSize      tokens per chunk
     * @param sharedChunks   chunks every thread's request starts with
     * @param distinctChunks chunks of each thread's own after them
     * @param cpuTierChunks  chunks the CPU tier holds (at least every shared and distinct chunk, and some fresh ones)
     * @param copyThreads    the engine's {@code copy_threads}
     * @param seed           token seed
     * @param streamingStores the engine's {@code copy_streaming_stores}
     */
    public record Settings(int[] threadCounts, long warmupMillis, long millis, int layers, int kvHeads, int headSize,
                           int blockSize, int chunkSize, int sharedChunks, int distinctChunks, int cpuTierChunks,
                           int copyThreads, long seed, boolean streamingStores) {
        public static final int[] DEFAULT_THREAD_COUNTS = {1, 2, 4, 8, 16};
        public static final long DEFAULT_MILLIS = 2000;
        public static final long DEFAULT_WARMUP_MILLIS = 500;

        public Settings {
            threadCounts = threadCounts.clone();
            if (threadCounts.length == 0 || Arrays.stream(threadCounts).anyMatch(n -> n < 1 || n > 1024)) {
                throw new IllegalArgumentException("thread counts must be 1 to 1024, were " + Arrays.toString(threadCounts));
            }
            int maxThreads = Arrays.stream(threadCounts).max().orElseThrow();
            if (warmupMillis < 0 || millis < 1 || layers < 1 || kvHeads < 1 || headSize < 4 || headSize % 4 != 0
                    || blockSize < 1 || chunkSize % blockSize != 0 || sharedChunks < 0 || distinctChunks < 0
                    || copyThreads < 1 || cpuTierChunks < sharedChunks + maxThreads * (distinctChunks + 1) + 1) {
                throw new IllegalArgumentException("bad concurrent bench settings: " + this + " (the CPU tier must hold "
                        + "the shared chunks, every thread's distinct chunks and its fresh one, and one more)");
            }
        }

        /**
         * A small model (4 layers, 4 KV heads × 64, bf16: 1 MiB per 256-token chunk), so that the
         * engine's bookkeeping weighs as much as the copies; 2 shared, 1 distinct, 1 fresh chunk per
         * request; a CPU tier of 256 chunks.
         */
        public static Settings defaults(int copyThreads) {
            return new Settings(DEFAULT_THREAD_COUNTS, DEFAULT_WARMUP_MILLIS, DEFAULT_MILLIS, 4, 4, 64, 16, 256, 2, 1, 256,
                    copyThreads, 42, true);
        }

        public Settings withTime(long warmupMillis, long millis) {
            return new Settings(threadCounts, warmupMillis, millis, layers, kvHeads, headSize, blockSize, chunkSize,
                    sharedChunks, distinctChunks, cpuTierChunks, copyThreads, seed, streamingStores);
        }

        public Settings withStreamingStores(boolean streaming) {
            return new Settings(threadCounts, warmupMillis, millis, layers, kvHeads, headSize, blockSize, chunkSize,
                    sharedChunks, distinctChunks, cpuTierChunks, copyThreads, seed, streaming);
        }

        public Settings withThreadCounts(int[] counts) {
            return new Settings(counts, warmupMillis, millis, layers, kvHeads, headSize, blockSize, chunkSize,
                    sharedChunks, distinctChunks, cpuTierChunks, copyThreads, seed, streamingStores);
        }

        @Override
        public int[] threadCounts() {
            return threadCounts.clone();
        }

        public long vectorBytes() {
            return (long) kvHeads * headSize * DTYPE.byteSize();
        }

        public long chunkBytes() {
            return 2L * layers * chunkSize * vectorBytes();
        }

        /** Tokens of one request: shared, distinct and one fresh chunk. */
        public int requestTokens() {
            return (sharedChunks + distinctChunks + 1) * chunkSize;
        }

        public ModelMetadata metadata() {
            return new ModelMetadata("lmcache4j/concurrent-bench", 1, 0, DTYPE, layers, kvHeads, headSize, false);
        }

        @Override
        public String toString() {
            return "threads " + Arrays.toString(threadCounts) + ", " + warmupMillis + "+" + millis + " ms, " + layers
                    + " layers, " + kvHeads + "x" + headSize + ", block " + blockSize + ", chunk " + chunkSize + ", "
                    + sharedChunks + " shared + " + distinctChunks + " distinct + 1 fresh chunk(s), CPU tier "
                    + cpuTierChunks + " chunks, " + copyThreads + " copy threads";
        }
    }

    /**
     * One N's measured window.
     *
     * @param threads          N
     * @param ops              operations (lookup + retrieve + store) completed in the window
     * @param seconds          the window's length
     * @param lockAcquisitions CPU tier lock acquisitions in the window
     * @param lockContended    of them, those that found the lock held
     * @param lockWaitNanos    time threads waited for the lock, summed over threads
     * @param lockHoldNanos    time the lock was held
     * @param hitTokens        tokens retrieved in the window
     * @param requestedTokens  tokens asked for by the retrieves in the window
     */
    public record Step(int threads, long ops, double seconds, long lockAcquisitions, long lockContended,
                       long lockWaitNanos, long lockHoldNanos, long hitTokens, long requestedTokens) {
        public double opsPerSecond() {
            return ops / seconds;
        }

        /** Mean time an operation spent waiting for the lock, µs. */
        public double lockWaitMicrosPerOp() {
            return ops == 0 ? 0 : lockWaitNanos / 1e3 / ops;
        }

        /** Mean time the lock was held per operation, µs. */
        public double lockHoldMicrosPerOp() {
            return ops == 0 ? 0 : lockHoldNanos / 1e3 / ops;
        }

        /** The share of the window the lock was held: 1 means it was the bottleneck. */
        public double lockBusyFraction() {
            return lockHoldNanos / (seconds * 1e9);
        }

        /** The share of the threads' time spent waiting for the lock. */
        public double lockWaitFraction() {
            return lockWaitNanos / (seconds * 1e9 * threads);
        }

        /** Acquisitions that had to wait, as a fraction. */
        public double lockContendedFraction() {
            return lockAcquisitions == 0 ? 0 : lockContended / (double) lockAcquisitions;
        }

        public double hitRate() {
            return requestedTokens == 0 ? 0 : hitTokens / (double) requestedTokens;
        }
    }

    /** Every N's step, and the verification of what the last retrieves loaded. */
    public record Result(Settings settings, List<Step> steps, int copyThreads, String streamingStores, long verifiedBytes,
                         long mismatches) {
        /** ops/s at 2 threads over ops/s at 1, or NaN when either was not measured. */
        public double scaling(int threads, int base) {
            Step a = step(threads);
            Step b = step(base);
            return a == null || b == null ? Double.NaN : a.opsPerSecond() / b.opsPerSecond();
        }

        private Step step(int threads) {
            return steps.stream().filter(s -> s.threads() == threads).findFirst().orElse(null);
        }
    }

    private ConcurrentBench() {
    }

    /** Runs the benchmark; progress lines go to {@code progress}. */
    public static Result run(Settings s, PrintStream progress) {
        int maxThreads = Arrays.stream(s.threadCounts()).max().orElseThrow();
        int perThread = s.requestTokens();
        int blocksPerThread = perThread / s.blockSize() + (perThread % s.blockSize() == 0 ? 0 : 1);
        int numBlocks = blocksPerThread * maxThreads;
        long layerBytes = PagedKvCache.layerBytes(LAYOUT, numBlocks, s.blockSize(), s.kvHeads(), s.headSize(), DTYPE);
        double cpuGb = (s.cpuTierChunks() + 1) * (double) s.chunkBytes() / (1L << 30);
        progress.printf("concurrent bench: %s; %d KiB per chunk, paged cache %d MiB%n", s, s.chunkBytes() >> 10,
                (layerBytes * s.layers()) >> 20);
        HostArenaOptions host = HostArenaOptions.DEFAULT.withCudaPinned(false).withHugePages(true);
        try (HostArena paged = HostArena.allocate(layerBytes * s.layers(), host)) {
            List<MemorySegment> layers = new ArrayList<>();
            for (int l = 0; l < s.layers(); l++) {
                layers.add(paged.segment().asSlice(l * layerBytes, layerBytes));
            }
            paged.segment().fill((byte) 0);
            PagedKvCache kv = new PagedKvCache(layers, LAYOUT, numBlocks, s.blockSize(), s.kvHeads(), s.headSize(), DTYPE);
            LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                    .set("chunk_size", s.chunkSize()).set("max_local_cpu_size", cpuGb).set("hash_seed", "0")
                    .set("copy_threads", s.copyThreads())
                    .set("copy_streaming_stores", s.streamingStores()).build();
            Client[] clients = new Client[maxThreads];
            SplittableRandom random = new SplittableRandom(s.seed());
            int[] shared = random.ints(s.sharedChunks() * s.chunkSize(), 0, 128_000).toArray();
            for (int c = 0; c < maxThreads; c++) {
                clients[c] = new Client(s, kv, c, blocksPerThread, shared, random.split());
            }
            KvConnector connector = KvConnector.host(config);
            try (LMCacheEngine engine = LMCacheEngine.create(config, s.metadata(), connector, List.of())) {
                List<Step> steps = new ArrayList<>();
                for (int n : s.threadCounts()) {
                    // Untimed: chunks of clients idle in the previous step may have been evicted by LRU since.
                    for (Client c : clients) {
                        c.storeKnownPrefix(engine);
                    }
                    Step step = measure(engine, Arrays.copyOf(clients, n), s);
                    steps.add(step);
                    progress.printf("  %2d threads: %9.0f ops/s, hit rate %.3f; CPU tier lock: %.2f us held and %.2f us "
                                    + "waited per op, held %.1f%% of the time, %.1f%% of acquisitions waited%n",
                            n, step.opsPerSecond(), step.hitRate(), step.lockHoldMicrosPerOp(), step.lockWaitMicrosPerOp(),
                            100 * step.lockBusyFraction(), 100 * step.lockContendedFraction());
                }
                long verified = 0;
                long mismatches = 0;
                for (Client c : clients) {
                    if (c.operations > 0) {
                        verified += (long) c.knownTokens() * KvModel.bytesPerToken(kv);
                        mismatches += c.mismatchesInKnownPrefix();
                    }
                }
                return new Result(s, steps, KvConnector.copyThreads(config), connector.streamingStores(), verified, mismatches);
            }
        }
    }

    private static Step measure(LMCacheEngine engine, Client[] clients, Settings s) {
        AtomicReference<String> phase = new AtomicReference<>("warmup");
        LongAdder ops = new LongAdder();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch ready = new CountDownLatch(clients.length);
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (Client client : clients) {
            threads.add(Thread.ofPlatform().name("bench-client-" + client.id).start(() -> {
                ready.countDown();
                try {
                    go.await();
                    String p;
                    while (!(p = phase.get()).equals("stop")) {
                        client.operate(engine);
                        if (p.equals("measure") && phase.get().equals("measure")) {
                            ops.increment(); // completed inside the window
                        }
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                    phase.set("stop");
                }
            }));
        }
        try {
            ready.await();
            go.countDown();
            Thread.sleep(s.warmupMillis());
            MetricsSnapshot before = engine.metrics().snapshot();
            long t0 = System.nanoTime();
            phase.compareAndSet("warmup", "measure");
            Thread.sleep(s.millis());
            phase.compareAndSet("measure", "stop");
            long t1 = System.nanoTime();
            MetricsSnapshot after = engine.metrics().snapshot();
            phase.set("stop");
            for (Thread t : threads) {
                t.join();
            }
            if (failure.get() != null) {
                throw new IllegalStateException("a client failed at " + clients.length + " threads: " + failure.get(), failure.get());
            }
            return new Step(clients.length, ops.sum(), (t1 - t0) / 1e9,
                    delta(before, after, "lmcache4j:cpu_tier_lock_acquisitions"),
                    delta(before, after, "lmcache4j:cpu_tier_lock_contended"),
                    delta(before, after, "lmcache4j:cpu_tier_lock_wait_nanos"),
                    delta(before, after, "lmcache4j:cpu_tier_lock_hold_nanos"),
                    after.hitTokens() - before.hitTokens(), after.requestedTokens() - before.requestedTokens());
        } catch (InterruptedException e) {
            phase.set("stop");
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static long delta(MetricsSnapshot before, MetricsSnapshot after, String metric) {
        Long a = after.tierReadings().get(metric);
        Long b = before.tierReadings().get(metric);
        if (a == null || b == null) {
            throw new IllegalStateException("the engine's metrics lack " + metric + ": " + after.tierReadings().keySet());
        }
        return a - b;
    }

    /** One request stream: its own slots of the paged cache, its distinct chunks and a fresh chunk per operation. */
    private static final class Client {
        private final Settings s;
        private final PagedKvCache kv;
        private final int id;
        private final long[] slots;
        private final int[] tokens;
        private final SplittableRandom random;
        private final String lookupId;
        private long operations;

        Client(Settings s, PagedKvCache kv, int id, int blocksPerThread, int[] shared, SplittableRandom random) {
            this.s = s;
            this.kv = kv;
            this.id = id;
            this.random = random;
            this.lookupId = "bench-" + id;
            tokens = new int[s.requestTokens()];
            System.arraycopy(shared, 0, tokens, 0, shared.length);
            for (int t = shared.length; t < tokens.length; t++) {
                tokens[t] = random.nextInt(128_000);
            }
            slots = new long[tokens.length];
            long firstSlot = (long) id * blocksPerThread * s.blockSize();
            for (int t = 0; t < tokens.length; t++) {
                slots[t] = firstSlot + t;
            }
        }

        /** Tokens of the shared and distinct chunks. */
        int knownTokens() {
            return (s.sharedChunks() + s.distinctChunks()) * s.chunkSize();
        }

        /** Stores the shared and distinct chunks from the model's KV (before any measured run). */
        void storeKnownPrefix(LMCacheEngine engine) {
            int known = knownTokens();
            if (known == 0) {
                return;
            }
            int[] prefix = Arrays.copyOf(tokens, known);
            KvModel.compute(kv, KvModel.prefixHashes(prefix), slots, 0, known);
            engine.store(engine.prepare(prefix, Map.of()), kv, slots);
        }

        /** One lookup → retrieve → store of the request with a new fresh chunk. */
        void operate(LMCacheEngine engine) {
            for (int t = knownTokens(); t < tokens.length; t++) {
                tokens[t] = random.nextInt(128_000);
            }
            PreparedRequest request = engine.prepare(tokens, Map.of());
            engine.lookup(request, lookupId);
            // A miss is possible (a client starved long enough for LRU to evict its own chunk); the store then
            // puts it back from the slots, which still hold its KV from the previous retrieve. The hit rate shows it.
            engine.retrieve(request, kv, slots, lookupId);
            engine.store(request, kv, slots);
            operations++;
        }

        long mismatchesInKnownPrefix() {
            int known = knownTokens();
            return known == 0 ? 0 : KvModel.mismatchingBytes(kv, KvModel.prefixHashes(Arrays.copyOf(tokens, known)), slots, 0, known);
        }
    }
}
