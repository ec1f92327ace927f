package lmcache4j.bench.gpu;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import lmcache4j.allocator.DType;
import lmcache4j.bench.json.ReportJson;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.cuda.CudaStream;
import lmcache4j.cuda.DeviceBuffer;
import lmcache4j.cuda.HostAllocFlags;
import lmcache4j.cuda.MemcpyKind;
import lmcache4j.cuda.PinnedHostBuffer;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;

/**
 * The engine on a GPU: a Llama-3-8B-shaped paged KV cache (32 layers, 8 KV heads × 128, bf16,
 * 16-token blocks) in device memory is stored through {@code KvConnector.forRuntime} into the
 * engine's CUDA-pinned CPU tier, then retrieved into a second device cache at other blocks, and
 * every token's K and V are compared on the host. Each run uses new tokens and new KV, and the
 * destination is zeroed first, so a retrieve that copied nothing cannot pass. The limit is one
 * contiguous {@code cudaMemcpy} of the same bytes between device and pinned host memory.
 */
public final class EngineOnGpu {
    static final int BLOCK = 16;
    private static final ModelMetadata MODEL = new ModelMetadata("meta-llama/Meta-Llama-3-8B", 1, 0, DType.BFLOAT16,
            32, 8, 128, false);

    /** Medians over the runs, for shuffled and for sequential block tables. */
    public record Result(String executor, int tokens, long bytes, int runs, int wrongTokens, Timing shuffled, Timing sequential,
                  double rawDeviceToHostGbps, double rawHostToDeviceGbps) {
        double storeVsRaw(Timing t) {
            return t.storeGbps() / rawDeviceToHostGbps;
        }

        double retrieveVsRaw(Timing t) {
            return t.retrieveGbps() / rawHostToDeviceGbps;
        }

        /** Adds the figures to a {@code --json} report. */
        public void addTo(ReportJson json) {
            json.string("executor", executor).integer("tokens", tokens).integer("bytes", bytes).integer("runs", runs)
                    .integer("wrong_tokens", wrongTokens)
                    .number("store_gbps", shuffled.storeGbps(), 3).number("retrieve_gbps", shuffled.retrieveGbps(), 3)
                    .number("store_vs_cuda_memcpy", storeVsRaw(shuffled), 3)
                    .number("retrieve_vs_cuda_memcpy", retrieveVsRaw(shuffled), 3)
                    .number("sequential_store_gbps", sequential.storeGbps(), 3)
                    .number("sequential_retrieve_gbps", sequential.retrieveGbps(), 3)
                    .number("sequential_store_vs_cuda_memcpy", storeVsRaw(sequential), 3)
                    .number("sequential_retrieve_vs_cuda_memcpy", retrieveVsRaw(sequential), 3)
                    .number("cuda_memcpy_d2h_gbps", rawDeviceToHostGbps, 3)
                    .number("cuda_memcpy_h2d_gbps", rawHostToDeviceGbps, 3);
        }

        String summary() {
            return String.format("executor %s, %d tokens (%d MiB) x %d runs, 0 of %d tokens wrong; shuffled blocks: store %.2f GB/s "
                            + "(%.2f of cudaMemcpy), retrieve %.2f GB/s (%.2f); sequential blocks: store %.2f GB/s (%.2f), retrieve "
                            + "%.2f GB/s (%.2f); cudaMemcpy device->host %.2f GB/s, host->device %.2f GB/s",
                    executor, tokens, bytes / CudaCheck.MIB, runs, tokens * runs * 2, shuffled.storeGbps(), storeVsRaw(shuffled),
                    shuffled.retrieveGbps(), retrieveVsRaw(shuffled), sequential.storeGbps(), storeVsRaw(sequential),
                    sequential.retrieveGbps(), retrieveVsRaw(sequential), rawDeviceToHostGbps, rawHostToDeviceGbps);
        }
    }

    /** Median store and retrieve bandwidth of the runs with one kind of block table. */
    public record Timing(double storeGbps, double retrieveGbps) {
    }

    private final CudaRuntime cuda;
    private final int tokens;
    private final int runs;
    private final PrintStream progress;
    private final long bytes;
    private int wrongTokens;
    private long seed = 100;

    private EngineOnGpu(CudaRuntime cuda, int tokens, int runs, PrintStream progress) {
        this.cuda = cuda;
        this.tokens = tokens;
        this.runs = runs;
        this.progress = progress;
        this.bytes = (long) tokens * MODEL.numLayers() * 2 * MODEL.numKvHeads() * MODEL.headSize() * MODEL.kvDtype().byteSize();
    }

    static Result run(CudaRuntime cuda, int tokens, int runs, PrintStream progress) {
        return new EngineOnGpu(cuda, tokens, runs, progress).measure();
    }

    private Result measure() {
        int blocks = tokens / BLOCK;
        long layerBytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, blocks, BLOCK, MODEL.numKvHeads(),
                MODEL.headSize(), MODEL.kvDtype());
        double cpuTierGib = Math.ceil(4.0 * bytes / (1L << 30)); // room for two runs' chunks
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", 256)
                .set("max_local_cpu_size", cpuTierGib)
                .set("hash_seed", "0")
                .build();
        List<DeviceBuffer> buffers = new ArrayList<>();
        try (KvConnector connector = KvConnector.forRuntime(cuda);
             LMCacheEngine engine = LMCacheEngine.create(config, MODEL, connector, List.of());
             PinnedHostBuffer staging = cuda.allocatePinned(layerBytes, HostAllocFlags.PORTABLE);
             PinnedHostBuffer stagingOther = cuda.allocatePinned(layerBytes, HostAllocFlags.PORTABLE);
             CudaStream stream = cuda.createStream(true)) {
            CudaCheck.require(connector.executorName().equals("cuda"), "the connector chose " + connector.executorName());
            PagedKvCache source = deviceCache(blocks, layerBytes, buffers);
            PagedKvCache destination = deviceCache(blocks, layerBytes, buffers);
            Timing shuffled = timeRuns(engine, source, destination, true, staging, stagingOther, stream);
            Timing sequential = timeRuns(engine, source, destination, false, staging, stagingOther, stream);
            double[] raw = rawCopies();
            return new Result(connector.executorName(), tokens, bytes, runs, wrongTokens, shuffled, sequential, raw[0], raw[1]);
        } finally {
            buffers.forEach(DeviceBuffer::close);
        }
    }

    private PagedKvCache deviceCache(int blocks, long layerBytes, List<DeviceBuffer> buffers) {
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < MODEL.numLayers(); l++) {
            DeviceBuffer buffer = cuda.allocateDevice(layerBytes);
            buffers.add(buffer);
            layers.add(buffer.pointer());
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, blocks, BLOCK, MODEL.numKvHeads(), MODEL.headSize(),
                MODEL.kvDtype());
    }

    private Timing timeRuns(LMCacheEngine engine, PagedKvCache source, PagedKvCache destination, boolean shuffle,
                            PinnedHostBuffer staging, PinnedHostBuffer stagingOther, CudaStream stream) {
        double[] store = new double[runs];
        double[] retrieve = new double[runs];
        for (int r = 0; r < runs; r++) {
            long runSeed = seed++;
            long[] sourceSlots = slots(shuffle, runSeed);
            long[] destinationSlots = slots(shuffle, runSeed + 7_919);
            fill(source, staging, runSeed);
            for (MemorySegment layer : destination.layers()) {
                cuda.memsetAsync(layer, 0, staging.byteSize(), stream);
            }
            stream.synchronize();
            int[] tokenIds = new SplittableRandom(runSeed).ints(tokens, 0, 128_000).toArray();
            PreparedRequest request = engine.prepare(tokenIds, Map.of());
            long t0 = System.nanoTime();
            int stored = engine.store(request, source, sourceSlots);
            long t1 = System.nanoTime();
            CudaCheck.require(stored == tokens, "stored " + stored + " of " + tokens + " tokens");
            String id = "cuda-check-" + runSeed;
            int found = engine.lookup(request, id);
            CudaCheck.require(found == tokens, "the lookup found " + found + " of " + tokens + " tokens");
            long t2 = System.nanoTime();
            boolean[] loaded = engine.retrieve(request, destination, destinationSlots, id);
            long t3 = System.nanoTime();
            long loadedCount = 0;
            for (boolean b : loaded) {
                loadedCount += b ? 1 : 0;
            }
            CudaCheck.require(loadedCount == tokens, "retrieved " + loadedCount + " of " + tokens + " tokens");
            int wrong = compare(source, sourceSlots, destination, destinationSlots, staging, stagingOther);
            wrongTokens += wrong;
            CudaCheck.require(wrong == 0, wrong + " of " + tokens + " tokens came back with other KV");
            store[r] = bytes / (double) (t1 - t0);
            retrieve[r] = bytes / (double) (t3 - t2);
            progress.printf("cuda-check: engine run %d (%s blocks): store %.2f GB/s, retrieve %.2f GB/s, all %d tokens identical%n",
                    r + 1, shuffle ? "shuffled" : "sequential", store[r], retrieve[r], tokens);
        }
        return new Timing(median(store), median(retrieve));
    }

    /** Slot of each token: its block's place in a (shuffled or identity) block table, plus its offset. */
    private long[] slots(boolean shuffle, long runSeed) {
        int blocks = tokens / BLOCK;
        int[] table = new int[blocks];
        Arrays.setAll(table, i -> i);
        if (shuffle) {
            SplittableRandom random = new SplittableRandom(runSeed);
            for (int i = blocks - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                int t = table[i];
                table[i] = table[j];
                table[j] = t;
            }
        }
        long[] slots = new long[tokens];
        for (int t = 0; t < tokens; t++) {
            slots[t] = (long) table[t / BLOCK] * BLOCK + t % BLOCK;
        }
        return slots;
    }

    private void fill(PagedKvCache kv, PinnedHostBuffer staging, long runSeed) {
        for (int l = 0; l < kv.layerCount(); l++) {
            CudaCheck.fillRandom(staging.segment(), runSeed * 1_000 + l);
            cuda.memcpy(kv.layers().get(l), staging.segment(), staging.byteSize(), MemcpyKind.HOST_TO_DEVICE);
        }
    }

    /** Tokens whose K or V, in any layer, differ between the two caches at their slots. */
    private int compare(PagedKvCache a, long[] slotsA, PagedKvCache b, long[] slotsB, PinnedHostBuffer hostA,
                        PinnedHostBuffer hostB) {
        boolean[] wrong = new boolean[slotsA.length];
        long n = a.vectorBytes();
        for (int l = 0; l < a.layerCount(); l++) {
            cuda.memcpy(hostA.segment(), a.layers().get(l), hostA.byteSize(), MemcpyKind.DEVICE_TO_HOST);
            cuda.memcpy(hostB.segment(), b.layers().get(l), hostB.byteSize(), MemcpyKind.DEVICE_TO_HOST);
            for (int t = 0; t < slotsA.length; t++) {
                for (int kv = 0; kv < 2; kv++) {
                    long offA = a.offset(kv, slotsA[t]);
                    long offB = b.offset(kv, slotsB[t]);
                    if (MemorySegment.mismatch(hostA.segment(), offA, offA + n, hostB.segment(), offB, offB + n) != -1) {
                        wrong[t] = true;
                    }
                }
            }
        }
        int count = 0;
        for (boolean w : wrong) {
            count += w ? 1 : 0;
        }
        return count;
    }

    /** cudaMemcpy of the run's bytes, device→host and host→device, best of three: the limit. */
    private double[] rawCopies() {
        try (DeviceBuffer device = cuda.allocateDevice(bytes);
             PinnedHostBuffer host = cuda.allocatePinned(bytes, HostAllocFlags.PORTABLE)) {
            double d2h = 0;
            double h2d = 0;
            for (int i = 0; i < 3; i++) {
                long t0 = System.nanoTime();
                cuda.memcpy(host.segment(), device.pointer(), bytes, MemcpyKind.DEVICE_TO_HOST);
                long t1 = System.nanoTime();
                cuda.memcpy(device.pointer(), host.segment(), bytes, MemcpyKind.HOST_TO_DEVICE);
                long t2 = System.nanoTime();
                d2h = Math.max(d2h, bytes / (double) (t1 - t0));
                h2d = Math.max(h2d, bytes / (double) (t2 - t1));
            }
            return new double[] {d2h, h2d};
        }
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
