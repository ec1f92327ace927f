package lmcache4j.engine.connector;

import java.util.Objects;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.internal.CopyExecutor;
import lmcache4j.engine.connector.internal.CopyPlan;
import lmcache4j.engine.connector.internal.CopyPlanner;
import lmcache4j.engine.connector.internal.CudaCopyExecutor;
import lmcache4j.engine.connector.internal.HostCopyExecutor;
import lmcache4j.engine.connector.internal.HostCopyPool;

/**
 * Moves KV between a serving engine's {@link PagedKvCache} and {@link MemoryObj}s: {@code fromPaged}
 * gathers a chunk on the store side, {@code toPaged} scatters it on the retrieve side, for whole
 * chunks ({@code KV_2LTD}, or {@code KV_MLA_FMT} for MLA) and per layer ({@code KV_T2D} /
 * {@code KV_2TD}). The copies are planned once per chunk and carried out on the host's copy threads or by CUDA.
 *
 * <p>Thread-safe: each thread plans into its own reusable plan.
 */
public final class KvConnector implements AutoCloseable {
    private final CopyExecutor executor;
    private final ThreadLocal<CopyPlan> plans = ThreadLocal.withInitial(CopyPlan::new);

    KvConnector(CopyExecutor executor) {
        this.executor = Objects.requireNonNull(executor, "executor");
    }

    /**
     * A connector for KV in host memory whose copies run on up to {@link #machineCopyThreads()}
     * threads (the caller and helper threads that {@link #close()} stops).
     */
    public static KvConnector host() {
        return host(HostCopyPool.machineThreads());
    }

    /**
     * A connector for KV in host memory whose copies run on up to {@code copyThreads} threads, the
     * caller included (1: the caller alone).
     */
    public static KvConnector host(int copyThreads) {
        return new KvConnector(new HostCopyExecutor(copyThreads));
    }

    /**
     * A connector for KV in host memory with the config's {@code copy_threads} (machine-sized when
     * unset) and {@code copy_streaming_stores}.
     */
    public static KvConnector host(LMCacheEngineConfig config) {
        return new KvConnector(new HostCopyExecutor(copyThreads(config), config.copyStreamingStores()));
    }

    /**
     * As {@link #host(LMCacheEngineConfig)}, plans of 4 MiB or more copied with {@code routine}
     * (where this machine runs it) whatever {@code copy_streaming_stores} says: to measure the
     * routines against each other.
     */
    public static KvConnector host(LMCacheEngineConfig config, HostCopyRoutine routine) {
        return new KvConnector(new HostCopyExecutor(copyThreads(config), routine));
    }

    /** The CUDA executor when {@code cuda} is available, else the host one with machine-sized copy threads. */
    public static KvConnector forRuntime(CudaRuntime cuda) {
        return cuda.isAvailable() ? new KvConnector(new CudaCopyExecutor(cuda)) : host();
    }

    /** As {@link #forRuntime(CudaRuntime)}, the host connector taking {@code copy_threads} from the config. */
    public static KvConnector forRuntime(CudaRuntime cuda, LMCacheEngineConfig config) {
        return cuda.isAvailable() ? new KvConnector(new CudaCopyExecutor(cuda)) : host(config);
    }

    /** The most copy threads a connector uses when none are configured. */
    public static final int MAX_DEFAULT_COPY_THREADS = HostCopyPool.MAX_DEFAULT_THREADS;

    /** The host copy threads a connector uses when none are configured: the machine's cores, at most {@link #MAX_DEFAULT_COPY_THREADS}. */
    public static int machineCopyThreads() {
        return HostCopyPool.machineThreads();
    }

    /** The host copy threads {@code config} asks for: {@code copy_threads}, else {@link #machineCopyThreads()}. */
    public static int copyThreads(LMCacheEngineConfig config) {
        return config.copyThreads().orElseGet(HostCopyPool::machineThreads);
    }

    /** The executor's name: {@code host} or {@code cuda}. */
    public String executorName() {
        return executor.name();
    }

    /** The most host threads one chunk's copies run on, the caller included (1 on CUDA: its copy engine does them). */
    public int copyThreads() {
        return executor.threads();
    }

    /** How host copies write: {@code avx2}/{@code sse2} streaming stores, {@code memcpy}, {@code off (why)}, or {@code none} on CUDA. */
    public String streamingStores() {
        return executor.streamingStores();
    }

    /** Bytes copied on the host so far (0 on CUDA). */
    public long hostCopiedBytes() {
        return executor.hostCopiedBytes();
    }

    /** Of {@link #hostCopiedBytes()}, the bytes written with streaming stores. */
    public long streamedBytes() {
        return executor.streamedBytes();
    }

    /** The shape of a whole-chunk object of {@code tokens} tokens for {@code kv}. */
    public static TensorShape chunkShape(PagedKvCache kv, int tokens) {
        return TensorShape.of(kv.layout().kvPlanes(), kv.layerCount(), tokens, kv.hidden());
    }

    /** The format of a whole-chunk object for {@code kv}. */
    public static MemoryFormat chunkFormat(PagedKvCache kv) {
        return kv.layout() == PagedLayout.MLA ? MemoryFormat.KV_MLA_FMT : MemoryFormat.KV_2LTD;
    }

    /** The shape of a one-layer object of {@code tokens} tokens in {@code format} (KV_T2D or KV_2TD). */
    public static TensorShape layerShape(PagedKvCache kv, int tokens, MemoryFormat format) {
        int planes = kv.layout().kvPlanes();
        return format == MemoryFormat.KV_2TD ? TensorShape.of(planes, tokens, kv.hidden())
                : TensorShape.of(tokens, planes, kv.hidden());
    }

    /**
     * Gathers tokens {@code [start, end)} of every layer into {@code obj}. Every token must have a
     * slot. Returns the bytes copied. Copies may still be in flight until {@link #finish()}.
     */
    public long fromPaged(PagedKvCache kv, long[] slots, int start, int end, MemoryObj obj) {
        checkChunk(kv, slots, start, end, obj);
        CopyPlan plan = plans.get();
        CopyPlanner.planChunk(kv, slots, start, end, CopyPlanner.Unmapped.REJECT, plan);
        executor.gather(plan, kv, obj.segment());
        return plan.totalBytes();
    }

    /**
     * Scatters {@code obj} into tokens {@code [start, end)} of every layer, leaving tokens whose slot
     * is -1 alone. Returns the bytes copied.
     *
     * @throws ChunkMismatchException when {@code obj} is not a whole chunk of this cache's shape
     *         and dtype (nothing is copied)
     */
    public long toPaged(MemoryObj obj, PagedKvCache kv, long[] slots, int start, int end) {
        checkChunk(kv, slots, start, end, obj);
        CopyPlan plan = plans.get();
        CopyPlanner.planChunk(kv, slots, start, end, CopyPlanner.Unmapped.SKIP, plan);
        executor.scatter(plan, obj.segment(), kv);
        return plan.totalBytes();
    }

    /** Gathers layer {@code layer} of tokens {@code [start, end)} into a {@code KV_T2D}/{@code KV_2TD} object. */
    public long fromPagedLayer(PagedKvCache kv, long[] slots, int layer, int start, int end, MemoryObj obj) {
        checkLayer(kv, slots, layer, start, end, obj);
        CopyPlan plan = plans.get();
        CopyPlanner.planLayer(kv, slots, layer, start, end, obj.format(), CopyPlanner.Unmapped.REJECT, plan);
        executor.gather(plan, kv, obj.segment());
        return plan.totalBytes();
    }

    /** Scatters a {@code KV_T2D}/{@code KV_2TD} object into layer {@code layer}, skipping slots of -1. */
    public long toPagedLayer(MemoryObj obj, PagedKvCache kv, long[] slots, int layer, int start, int end) {
        checkLayer(kv, slots, layer, start, end, obj);
        CopyPlan plan = plans.get();
        CopyPlanner.planLayer(kv, slots, layer, start, end, obj.format(), CopyPlanner.Unmapped.SKIP, plan);
        executor.scatter(plan, obj.segment(), kv);
        return plan.totalBytes();
    }

    /** Waits for every copy submitted so far (one synchronisation per batch on CUDA). */
    public void finish() {
        executor.finish();
    }

    /** Closes the executor: stops host copy threads, or destroys the CUDA stream. */
    @Override
    public void close() {
        executor.close();
    }

    private static void checkRange(PagedKvCache kv, long[] slots, int start, int end, MemoryObj obj) {
        if (start < 0 || end <= start || end > slots.length) {
            throw new IllegalArgumentException("token range [" + start + ", " + end + ") is not inside the "
                    + slots.length + "-token slot mapping");
        }
        if (obj.dtype() != kv.dtype()) {
            throw new ChunkMismatchException(obj + " is " + obj.dtype().torchName() + " but the KV cache is "
                    + kv.dtype().torchName());
        }
    }

    private static void checkChunk(PagedKvCache kv, long[] slots, int start, int end, MemoryObj obj) {
        checkRange(kv, slots, start, end, obj);
        TensorShape expected = chunkShape(kv, end - start);
        if (obj.format() != chunkFormat(kv) || !obj.shape().equals(expected)) {
            throw new ChunkMismatchException(obj + " does not fit tokens [" + start + ", " + end + ") of this cache: "
                    + "expected " + chunkFormat(kv) + " " + expected);
        }
    }

    private static void checkLayer(PagedKvCache kv, long[] slots, int layer, int start, int end, MemoryObj obj) {
        checkRange(kv, slots, start, end, obj);
        if (layer < 0 || layer >= kv.layerCount()) {
            throw new IllegalArgumentException("layer " + layer + " outside [0, " + kv.layerCount() + ")");
        }
        if (obj.format() != MemoryFormat.KV_T2D && obj.format() != MemoryFormat.KV_2TD) {
            throw new ChunkMismatchException(obj + " is not a one-layer object (KV_T2D or KV_2TD)");
        }
        TensorShape expected = layerShape(kv, end - start, obj.format());
        if (!obj.shape().equals(expected)) {
            throw new ChunkMismatchException(obj + " does not fit layer " + layer + " tokens [" + start + ", " + end
                    + "): expected " + obj.format() + " " + expected);
        }
    }
}
