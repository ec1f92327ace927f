package lmcache4j.bench.store;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.bench.demo.KvModel;
import lmcache4j.bench.demo.ServingSimulator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.HostCopyRoutine;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.metrics.MetricsSnapshot;

/**
 * Store and retrieve bandwidth of the engine against a plain copy of the same bytes, in the same
 * process. The KV is Llama-3-8B-shaped (32 layers, 8 KV heads × 128, bf16) in a paged cache in host
 * memory (vLLM's FlashAttention layout, 16-token blocks, a shuffled block table), stored and
 * retrieved in 256-token chunks (32 MiB each) through the host connector.
 *
 * <p>Each measured run does, in this order, on the same buffers:
 * <ol>
 *   <li>{@code memcpy gather}: {@link MemorySegment#copy} of exactly the runs a store's copy plan
 *       moves (one per block, plane and layer: 16 tokens × 2 KiB = 32 KiB) from the paged cache
 *       into a contiguous buffer laid out as the engine's objects ({@code KV_2LTD});</li>
 *   <li>{@code store}: {@code engine.clear()} (untimed), then {@code engine.prepare} of the tokens
 *       and one {@code engine.store} of every chunk, timed as a whole: hashing, allocation,
 *       planning, copies and bookkeeping;</li>
 *   <li>{@code memcpy scatter}: the reverse runs, contiguous buffer → paged cache at a second
 *       shuffled block table;</li>
 *   <li>{@code retrieve}: one {@code engine.retrieve} of every chunk of the same prepared request
 *       (not hashed again, as in serving) into that second block table;</li>
 *   <li>{@code memcpy whole}: whole 32 MiB chunks between two contiguous buffers;</li>
 *   <li>{@code memcpy one copy}: one {@link MemorySegment#copy} of all the run's bytes between the two
 *       buffers, the limit a single thread's copy reaches ({@code *_vs_chunk_memcpy} use it);</li>
 *   <li>{@code best copy}: all the run's bytes between the two buffers on as many threads as the
 *       engine copies with, each thread one contiguous part, once with every {@link HostCopyRoutine}
 *       the machine runs ({@link BestCopy}); the fastest routine is the limit ({@code *_vs_best_copy}).</li>
 * </ol>
 * Store and retrieve copy each chunk on {@code copyThreads} threads ({@code copy_threads}) with
 * {@code copyRoutine}; the memcpy baselines run on one thread.
 * Bandwidth is bytes of KV moved ÷ wall time (GB/s = 10⁹ B/s); the figure of each is the median
 * over the measured runs. Every buffer is touched before the first run, and the warmup runs leave
 * the CPU tier's memory touched too, so no page fault is timed. After the runs the retrieved KV is
 * verified against {@link KvModel} so that a fast wrong answer cannot pass.
 */
public final class StoreBench {
    static final DType DTYPE = DType.BFLOAT16;
    static final PagedLayout LAYOUT = PagedLayout.FLASH_ATTENTION;

    /**
     * @param chunks    256-token chunks per store and per retrieve
     * @param runs      measured runs
     * @param warmup    unmeasured runs first
     * @param layers    attention layers (32 for Llama-3-8B)
     * @param kvHeads   KV heads (8)
     * @param headSize  elements per head (128)
     * @param blockSize tokens per paged-cache block (16)
     * @param chunkSize tokens per chunk (256)
     * @param seed      tokens' and block tables' seed
     * @param copyThreads threads, the caller included, that copy one chunk ({@code copy_threads})
     * @param copyRoutine the routine the engine copies with where the machine runs it (else
     *                    {@link MemorySegment#copy}, as with {@code copy_streaming_stores} off)
     */
    public record Settings(int chunks, int runs, int warmup, int layers, int kvHeads, int headSize, int blockSize,
                           int chunkSize, long seed, int copyThreads, HostCopyRoutine copyRoutine) {
        public static final int DEFAULT_CHUNKS = 16;
        public static final int DEFAULT_RUNS = 9;
        public static final int DEFAULT_WARMUP = 3;

        public Settings {
            if (chunks < 1 || runs < 1 || warmup < 0 || layers < 1 || kvHeads < 1 || headSize < 4 || headSize % 4 != 0
                    || blockSize < 1 || chunkSize < blockSize || chunkSize % blockSize != 0 || copyThreads < 1) {
                throw new IllegalArgumentException("bad store bench settings: " + chunks + " chunks, " + runs + " runs, "
                        + warmup + " warmup, " + layers + " layers, " + kvHeads + "×" + headSize + ", block " + blockSize
                        + ", chunk " + chunkSize + " (chunk a multiple of the block), " + copyThreads + " copy threads");
            }
            Objects.requireNonNull(copyRoutine, "copyRoutine");
        }

        /** Llama-3-8B: 32 layers, 8 KV heads × 128, bf16, 16-token blocks, 256-token chunks; copy threads sized from the machine. */
        public static Settings defaults() {
            return new Settings(DEFAULT_CHUNKS, DEFAULT_RUNS, DEFAULT_WARMUP, 32, 8, 128, 16, 256, 42,
                    KvConnector.machineCopyThreads(), HostCopyRoutine.STREAMING_STORES);
        }

        public Settings withChunks(int n) {
            return new Settings(n, runs, warmup, layers, kvHeads, headSize, blockSize, chunkSize, seed, copyThreads, copyRoutine);
        }

        public Settings withRuns(int runs, int warmup) {
            return new Settings(chunks, runs, warmup, layers, kvHeads, headSize, blockSize, chunkSize, seed, copyThreads, copyRoutine);
        }

        public Settings withCopyThreads(int threads) {
            return new Settings(chunks, runs, warmup, layers, kvHeads, headSize, blockSize, chunkSize, seed, threads, copyRoutine);
        }

        public Settings withCopyRoutine(HostCopyRoutine routine) {
            return new Settings(chunks, runs, warmup, layers, kvHeads, headSize, blockSize, chunkSize, seed, copyThreads, routine);
        }

        public long vectorBytes() {
            return (long) kvHeads * headSize * DTYPE.byteSize();
        }

        public long chunkBytes() {
            return 2L * layers * chunkSize * vectorBytes();
        }

        public long totalBytes() {
            return chunks * chunkBytes();
        }

        public int tokens() {
            return chunks * chunkSize;
        }

        public ModelMetadata metadata() {
            return new ModelMetadata("meta-llama/Meta-Llama-3-8B", 1, 0, DTYPE, layers, kvHeads, headSize, false);
        }
    }

    /**
     * Per measured run, GB/s of each operation; {@code parallelCopies}: per routine the machine runs,
     * GB/s of the run's bytes copied on {@code copyThreads} threads in contiguous parts.
     */
    public record Result(Settings settings, double[] store, double[] retrieve, double[] memcpyGather,
                         double[] memcpyScatter, double[] memcpyWhole, double[] memcpyContiguous,
                         Map<HostCopyRoutine, double[]> parallelCopies, long runBytes,
                         long cpuTierBytes, int copyThreads, String streamingStores, double streamedFraction,
                         double engineStoreCopyGbps, double engineRetrieveCopyGbps, long verifiedBytes, long mismatches) {
        public double storeGbps() {
            return median(store);
        }

        public double retrieveGbps() {
            return median(retrieve);
        }

        /** The store's limit: memcpy of the same 32 KiB runs, paged → contiguous. */
        public double memcpyGbps() {
            return median(memcpyGather);
        }

        /** The retrieve's limit: memcpy of the same 32 KiB runs, contiguous → paged. */
        public double memcpyScatterGbps() {
            return median(memcpyScatter);
        }

        public double memcpyWholeGbps() {
            return median(memcpyWhole);
        }

        /** One contiguous {@link MemorySegment#copy} of all of a run's bytes: the limit of one thread's copy. */
        public double memcpyContiguousGbps() {
            return median(memcpyContiguous);
        }

        /** Store against one contiguous copy of the same bytes. */
        public double storeVsChunkMemcpy() {
            return storeGbps() / memcpyContiguousGbps();
        }

        /** Retrieve against one contiguous copy of the same bytes. */
        public double retrieveVsChunkMemcpy() {
            return retrieveGbps() / memcpyContiguousGbps();
        }

        public double storeVsMemcpy() {
            return storeGbps() / memcpyGbps();
        }

        public double retrieveVsMemcpy() {
            return retrieveGbps() / memcpyScatterGbps();
        }

        /** Per routine, the median GB/s of its parallel copy of the run's bytes. */
        public Map<HostCopyRoutine, Double> parallelCopyGbps() {
            Map<HostCopyRoutine, Double> medians = new EnumMap<>(HostCopyRoutine.class);
            parallelCopies.forEach((routine, gbps) -> medians.put(routine, median(gbps)));
            return medians;
        }

        /** The routine whose parallel copy of the run's bytes was fastest (median over the runs). */
        public HostCopyRoutine bestCopyRoutine() {
            return parallelCopies.entrySet().stream().max(Comparator.comparingDouble(e -> median(e.getValue())))
                    .orElseThrow().getKey();
        }

        /** The machine's best copy of the run's bytes: {@link #bestCopyRoutine()} on {@link #copyThreads()} threads. */
        public double bestCopyGbps() {
            return median(parallelCopies.get(bestCopyRoutine()));
        }

        /** Store against the machine's best copy of the same bytes. */
        public double storeVsBestCopy() {
            return storeGbps() / bestCopyGbps();
        }

        /** Retrieve against the machine's best copy of the same bytes. */
        public double retrieveVsBestCopy() {
            return retrieveGbps() / bestCopyGbps();
        }
    }

    private StoreBench() {
    }

    /** Runs the benchmark; progress lines go to {@code progress}. */
    public static Result run(Settings s, PrintStream progress) {
        int tokens = s.tokens();
        int blocksPerTable = tokens / s.blockSize();
        int numBlocks = blocksPerTable * 2; // two disjoint shuffled tables: the store's source, the retrieve's target
        long layerBytes = PagedKvCache.layerBytes(LAYOUT, numBlocks, s.blockSize(), s.kvHeads(), s.headSize(), DTYPE);
        HostArenaOptions host = HostArenaOptions.DEFAULT.withCudaPinned(false).withHugePages(true);
        progress.printf("store bench: %d chunks of %d MiB; paged cache %d MiB, CPU tier %d MiB, two %d MiB memcpy buffers%n",
                s.chunks(), s.chunkBytes() >> 20, (layerBytes * s.layers()) >> 20, s.totalBytes() >> 20, s.totalBytes() >> 20);
        try (HostArena paged = HostArena.allocate(layerBytes * s.layers(), host);
             HostArena bufferA = HostArena.allocate(s.totalBytes(), host);
             HostArena bufferB = HostArena.allocate(s.totalBytes(), host)) {
            PagedKvCache kv = pagedCache(s, paged.segment(), numBlocks, layerBytes);
            paged.segment().fill((byte) 0); // touch everything before timing
            bufferA.segment().fill((byte) 0);
            bufferB.segment().fill((byte) 0);

            SplittableRandom random = new SplittableRandom(s.seed());
            int[] blocks = shuffledBlocks(numBlocks, random);
            int[] storeTable = Arrays.copyOfRange(blocks, 0, blocksPerTable);
            int[] retrieveTable = Arrays.copyOfRange(blocks, blocksPerTable, numBlocks);
            long[] storeSlots = slots(storeTable, s.blockSize(), tokens);
            long[] retrieveSlots = slots(retrieveTable, s.blockSize(), tokens);
            int[] ids = new int[tokens];
            for (int t = 0; t < tokens; t++) {
                ids[t] = random.nextInt(128_000);
            }
            long[] hashes = KvModel.prefixHashes(ids);
            KvModel.compute(kv, hashes, storeSlots, 0, tokens);

            Runs gather = new Runs(s, kv, storeTable);
            Runs scatter = new Runs(s, kv, retrieveTable);
            // The CPU tier holds every chunk with room to spare for alignment.
            double cpuGb = (s.totalBytes() + s.chunkBytes()) / (double) (1L << 30);
            LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                    .set("chunk_size", s.chunkSize()).set("max_local_cpu_size", cpuGb).set("hash_seed", "0")
                    .set("copy_threads", s.copyThreads()).build();
            KvConnector connector = KvConnector.host(config, s.copyRoutine());
            try (BestCopy best = new BestCopy(KvConnector.copyThreads(config));
                 LMCacheEngine engine = LMCacheEngine.create(config, s.metadata(), connector, List.of())) {
                int n = s.runs();
                double[] store = new double[n];
                double[] retrieve = new double[n];
                double[] memGather = new double[n];
                double[] memScatter = new double[n];
                double[] memWhole = new double[n];
                double[] memContiguous = new double[n];
                Map<HostCopyRoutine, double[]> parallel = new EnumMap<>(HostCopyRoutine.class);
                best.routines().forEach(routine -> parallel.put(routine, new double[n]));
                long bytes = s.totalBytes();
                MetricsSnapshot before = null;
                for (int r = -s.warmup(); r < n; r++) {
                    if (r == 0) {
                        before = engine.metrics().snapshot();
                    }
                    long[] t = timedRun(s, r, engine, kv, gather, scatter, ids, storeSlots, retrieveSlots,
                            bufferA.segment(), bufferB.segment());
                    String bestLine = bestCopies(best, parallel, r, bufferA.segment(), bufferB.segment(), bytes);
                    if (r >= 0) {
                        memGather[r] = bytes / (double) (t[1] - t[0]);
                        store[r] = bytes / (double) (t[3] - t[2]);
                        memScatter[r] = bytes / (double) (t[4] - t[3]);
                        retrieve[r] = bytes / (double) (t[5] - t[4]);
                        memWhole[r] = bytes / (double) (t[6] - t[5]);
                        memContiguous[r] = bytes / (double) (t[7] - t[6]);
                    }
                    progress.printf("  %s %2d/%d  store %6.2f  retrieve %6.2f  memcpy gather %6.2f  scatter %6.2f  whole %6.2f  one copy %6.2f  %d-thread copy:%s GB/s%n",
                            r < 0 ? "warmup" : "run   ", r < 0 ? r + s.warmup() + 1 : r + 1, r < 0 ? s.warmup() : n,
                            bytes / (double) (t[3] - t[2]), bytes / (double) (t[5] - t[4]), bytes / (double) (t[1] - t[0]),
                            bytes / (double) (t[4] - t[3]), bytes / (double) (t[6] - t[5]), bytes / (double) (t[7] - t[6]),
                            KvConnector.copyThreads(config), bestLine);
                }
                long mismatches = KvModel.mismatchingBytes(kv, hashes, retrieveSlots, 0, tokens);
                MetricsSnapshot after = engine.metrics().snapshot();
                return new Result(s, store, retrieve, memGather, memScatter, memWhole, memContiguous, parallel, bytes,
                        engine.storage().memoryCapacityBytes(), KvConnector.copyThreads(config), connector.streamingStores(),
                        streamedFraction(before, after),
                        ServingSimulator.copyGbps(before.storedBytes(), before.storeGbps(), after.storedBytes(), after.storeGbps()),
                        ServingSimulator.copyGbps(before.retrievedBytes(), before.retrieveGbps(), after.retrievedBytes(), after.retrieveGbps()),
                        (long) tokens * KvModel.bytesPerToken(kv), mismatches);
            }
        }
    }

    /** The paged KV cache over {@code memory}: one slice of {@code layerBytes} per layer. */
    private static PagedKvCache pagedCache(Settings s, MemorySegment memory, int numBlocks, long layerBytes) {
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < s.layers(); l++) {
            layers.add(memory.asSlice(l * layerBytes, layerBytes));
        }
        return new PagedKvCache(layers, LAYOUT, numBlocks, s.blockSize(), s.kvHeads(), s.headSize(), DTYPE);
    }

    /**
     * One run's clock readings, t0 to t7: the memcpy gather of the store's runs, the engine's clear,
     * prepare and store, the memcpy scatter, the retrieve, the chunk-wise and the one-copy memcpy.
     *
     * @throws IllegalStateException when the store or the retrieve did not move every token
     */
    private static long[] timedRun(Settings s, int run, LMCacheEngine engine, PagedKvCache kv, Runs gather, Runs scatter,
                                   int[] ids, long[] storeSlots, long[] retrieveSlots, MemorySegment a, MemorySegment b) {
        long[] t = new long[8];
        t[0] = System.nanoTime();
        gather.gather(kv, a);
        t[1] = System.nanoTime();
        engine.clear();
        t[2] = System.nanoTime();
        PreparedRequest request = engine.prepare(ids, Map.of()); // hashed once, timed with the store
        int stored = engine.store(request, kv, storeSlots);
        t[3] = System.nanoTime();
        scatter.scatter(a, kv);
        t[4] = System.nanoTime();
        boolean[] loaded = engine.retrieve(request, kv, retrieveSlots);
        t[5] = System.nanoTime();
        for (int c = 0; c < s.chunks(); c++) {
            MemorySegment.copy(a, c * s.chunkBytes(), b, c * s.chunkBytes(), s.chunkBytes());
        }
        t[6] = System.nanoTime();
        MemorySegment.copy(b, 0, a, 0, s.totalBytes());
        t[7] = System.nanoTime();
        if (stored != ids.length || !allTrue(loaded)) {
            throw new IllegalStateException("run " + run + ": stored " + stored + " and retrieved " + count(loaded) + " of "
                    + ids.length + " tokens; the CPU tier should hold them all");
        }
        return t;
    }

    /** The machine's best copies of {@code bytes}, one per routine (kept for measured runs); returns their progress text. */
    private static String bestCopies(BestCopy best, Map<HostCopyRoutine, double[]> parallel, int run, MemorySegment a,
                                     MemorySegment b, long bytes) {
        StringBuilder line = new StringBuilder();
        for (HostCopyRoutine routine : best.routines()) {
            double gbps = best.copyGbps(routine, a, b, bytes);
            if (run >= 0) {
                parallel.get(routine)[run] = gbps;
            }
            line.append(String.format(Locale.ROOT, " %s %.2f", routine.label(), gbps));
        }
        return line.toString();
    }

    /** The share of the measured runs' host-copied bytes that were written with streaming stores. */
    private static double streamedFraction(MetricsSnapshot before, MetricsSnapshot after) {
        long copied = reading(after, "lmcache4j:host_copy_bytes") - reading(before, "lmcache4j:host_copy_bytes");
        long streamed = reading(after, "lmcache4j:host_copy_streamed_bytes") - reading(before, "lmcache4j:host_copy_streamed_bytes");
        return copied == 0 ? 0 : streamed / (double) copied;
    }

    private static long reading(MetricsSnapshot snapshot, String metric) {
        Long value = snapshot.tierReadings().get(metric);
        if (value == null) {
            throw new IllegalStateException("the engine's metrics lack " + metric + ": " + snapshot.tierReadings().keySet());
        }
        return value;
    }

    /**
     * The copies a chunked store's plans make, one per (chunk, plane, layer, block): 16 tokens of one
     * plane of one layer, contiguous on both sides, to the object's {@code KV_2LTD} offset.
     */
    private static final class Runs {
        final int[] layer;
        final long[] pagedOffset;
        final long[] objectOffset;
        final long length;

        Runs(Settings s, PagedKvCache kv, int[] table) {
            int blocksPerChunk = s.chunkSize() / s.blockSize();
            int count = s.chunks() * 2 * s.layers() * blocksPerChunk;
            layer = new int[count];
            pagedOffset = new long[count];
            objectOffset = new long[count];
            length = (long) s.blockSize() * s.vectorBytes();
            int i = 0;
            for (int c = 0; c < s.chunks(); c++) {
                for (int p = 0; p < 2; p++) {
                    for (int l = 0; l < s.layers(); l++) {
                        for (int b = 0; b < blocksPerChunk; b++) {
                            layer[i] = l;
                            pagedOffset[i] = kv.offset(p, (long) table[c * blocksPerChunk + b] * s.blockSize());
                            objectOffset[i] = c * s.chunkBytes()
                                    + (((long) p * s.layers() + l) * s.chunkSize() + (long) b * s.blockSize()) * s.vectorBytes();
                            i++;
                        }
                    }
                }
            }
        }

        void gather(PagedKvCache kv, MemorySegment objects) {
            List<MemorySegment> layers = kv.layers();
            for (int i = 0; i < layer.length; i++) {
                MemorySegment.copy(layers.get(layer[i]), pagedOffset[i], objects, objectOffset[i], length);
            }
        }

        void scatter(MemorySegment objects, PagedKvCache kv) {
            List<MemorySegment> layers = kv.layers();
            for (int i = 0; i < layer.length; i++) {
                MemorySegment.copy(objects, objectOffset[i], layers.get(layer[i]), pagedOffset[i], length);
            }
        }
    }

    private static int[] shuffledBlocks(int n, SplittableRandom random) {
        int[] blocks = new int[n];
        for (int i = 0; i < n; i++) {
            blocks[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = blocks[i];
            blocks[i] = blocks[j];
            blocks[j] = t;
        }
        return blocks;
    }

    private static long[] slots(int[] table, int blockSize, int tokens) {
        long[] slots = new long[tokens];
        for (int t = 0; t < tokens; t++) {
            slots[t] = (long) table[t / blockSize] * blockSize + t % blockSize;
        }
        return slots;
    }

    private static boolean allTrue(boolean[] mask) {
        return count(mask) == mask.length;
    }

    private static int count(boolean[] mask) {
        int n = 0;
        for (boolean b : mask) {
            n += b ? 1 : 0;
        }
        return n;
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
