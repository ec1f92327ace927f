package lmcache4j.engine.connector.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

import lmcache4j.cuda.CudaException;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.cuda.CudaStream;
import lmcache4j.cuda.MemcpyKind;
import lmcache4j.engine.connector.PagedKvCache;

/**
 * Copies between device-resident paged KV buffers and pinned host objects on a dedicated
 * non-blocking stream, one {@code cudaStreamSynchronize} per batch ({@link #finish()}). A plan's
 * runs go to the runtime as one {@code cudaMemcpyBatchAsync} on CUDA 13 (the runtime infers each
 * direction from the pointers), else as one {@code cudaMemcpyAsync} each with its direction given
 * explicitly: a shuffled block table makes a 32 MiB chunk 1,024 runs of 32 KiB, and a call per run
 * is what limited it. Layer buffers are device addresses (zero-length segments); objects must be
 * pinned host memory for the copies to be truly asynchronous (CUDA docs, "Asynchronous Concurrent
 * Execution"). {@code -Dlmcache4j.cuda.perRunCopies=true} keeps the call per run (for comparisons).
 *
 * <p>Proven on an H100 and an H200 by {@code ./lmcache4j cuda-check} (docs/performance.md). On a
 * machine without a driver every call answers the runtime's error, which this executor rethrows as
 * {@link lmcache4j.cuda.CudaException}.
 */
public final class CudaCopyExecutor implements CopyExecutor {
    private static final System.Logger LOG = System.getLogger(CudaCopyExecutor.class.getName());

    private final CudaRuntime cuda;
    private final CudaStream stream;
    /** Whether a plan goes to the runtime as one cudaMemcpyBatchAsync (CUDA 13) rather than a call per run. */
    private volatile boolean batched;

    /** An executor on a new non-blocking stream of the calling thread's current device. */
    public CudaCopyExecutor(CudaRuntime cuda) {
        this.cuda = Objects.requireNonNull(cuda, "cuda");
        this.stream = cuda.createStream(true);
        this.batched = cuda.hasBatchCopies() && !Boolean.getBoolean("lmcache4j.cuda.perRunCopies");
    }

    @Override
    public void gather(CopyPlan plan, PagedKvCache kv, MemorySegment object) {
        copy(plan, kv, object, true);
    }

    @Override
    public void scatter(CopyPlan plan, MemorySegment object, PagedKvCache kv) {
        copy(plan, kv, object, false);
    }

    private void copy(CopyPlan plan, PagedKvCache kv, MemorySegment object, boolean toObject) {
        if (batched && plan.runs() > 1) {
            try {
                batch(plan, kv, object, toObject);
                return;
            } catch (CudaException e) {
                // A driver that refuses batches (before any copy of this plan was queued): one call per run from now on.
                batched = false;
                LOG.log(System.Logger.Level.WARNING, "cudaMemcpyBatchAsync refused (" + e.getMessage()
                        + "); copying with one cudaMemcpyAsync per run");
            }
        }
        for (int i = 0; i < plan.runs(); i++) {
            MemorySegment paged = MemorySegment.ofAddress(kv.layers().get(plan.layer(i)).address() + plan.pagedOffset(i));
            MemorySegment host = object.asSlice(plan.objectOffset(i), plan.length(i));
            if (toObject) {
                cuda.memcpyAsync(host, paged, plan.length(i), MemcpyKind.DEVICE_TO_HOST, stream);
            } else {
                cuda.memcpyAsync(paged, host, plan.length(i), MemcpyKind.HOST_TO_DEVICE, stream);
            }
        }
    }

    /** The plan's runs as one batch: three arrays of addresses and sizes, read by the runtime during the call. */
    private void batch(CopyPlan plan, PagedKvCache kv, MemorySegment object, boolean toObject) {
        int n = plan.runs();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dsts = arena.allocate(ValueLayout.JAVA_LONG, n);
            MemorySegment srcs = arena.allocate(ValueLayout.JAVA_LONG, n);
            MemorySegment sizes = arena.allocate(ValueLayout.JAVA_LONG, n);
            long objectBase = object.address();
            for (int i = 0; i < n; i++) {
                long paged = kv.layers().get(plan.layer(i)).address() + plan.pagedOffset(i);
                Objects.checkFromIndexSize(plan.objectOffset(i), plan.length(i), object.byteSize());
                long host = objectBase + plan.objectOffset(i);
                dsts.setAtIndex(ValueLayout.JAVA_LONG, i, toObject ? host : paged);
                srcs.setAtIndex(ValueLayout.JAVA_LONG, i, toObject ? paged : host);
                sizes.setAtIndex(ValueLayout.JAVA_LONG, i, plan.length(i));
            }
            cuda.memcpyBatchAsync(dsts, srcs, sizes, n, stream);
        }
    }

    @Override
    public void finish() {
        stream.synchronize();
    }

    @Override
    public String name() {
        return "cuda";
    }

    /** How plans go to the runtime: {@code batched} (one cudaMemcpyBatchAsync a plan) or {@code per run}. */
    public String submission() {
        return batched ? "batched" : "per run";
    }

    @Override
    public void close() {
        stream.close();
    }
}
