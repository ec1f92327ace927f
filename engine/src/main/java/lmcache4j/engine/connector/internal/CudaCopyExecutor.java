package lmcache4j.engine.connector.internal;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

import lmcache4j.cuda.CudaRuntime;
import lmcache4j.cuda.CudaStream;
import lmcache4j.cuda.MemcpyKind;
import lmcache4j.engine.connector.PagedKvCache;

/**
 * Copies between device-resident paged KV buffers and pinned host objects with
 * {@code cudaMemcpyAsync} on a dedicated non-blocking stream, one {@code cudaStreamSynchronize}
 * per batch ({@link #finish()}). Layer buffers are device addresses (zero-length segments); objects
 * must be pinned host memory for the copies to be truly asynchronous (CUDA docs, "Asynchronous
 * Concurrent Execution": pageable memory makes {@code cudaMemcpyAsync} staged and synchronous).
 * Directions are given explicitly (device-to-host on gather, host-to-device on scatter) rather than
 * {@code cudaMemcpyDefault}, so an unregistered host pointer is reported instead of guessed.
 *
 * <p>Proven on an H100 by {@code ./lmcache4j cuda-check} (docs/performance.md). On a machine without
 * a driver every call answers the runtime's error, which this executor rethrows as
 * {@link lmcache4j.cuda.CudaException}.
 */
public final class CudaCopyExecutor implements CopyExecutor {
    private final CudaRuntime cuda;
    private final CudaStream stream;

    /** An executor on a new non-blocking stream of the calling thread's current device. */
    public CudaCopyExecutor(CudaRuntime cuda) {
        this.cuda = Objects.requireNonNull(cuda, "cuda");
        this.stream = cuda.createStream(true);
    }

    @Override
    public void gather(CopyPlan plan, PagedKvCache kv, MemorySegment object) {
        for (int i = 0; i < plan.runs(); i++) {
            MemorySegment src = MemorySegment.ofAddress(kv.layers().get(plan.layer(i)).address() + plan.pagedOffset(i));
            cuda.memcpyAsync(object.asSlice(plan.objectOffset(i), plan.length(i)), src, plan.length(i),
                    MemcpyKind.DEVICE_TO_HOST, stream);
        }
    }

    @Override
    public void scatter(CopyPlan plan, MemorySegment object, PagedKvCache kv) {
        for (int i = 0; i < plan.runs(); i++) {
            MemorySegment dst = MemorySegment.ofAddress(kv.layers().get(plan.layer(i)).address() + plan.pagedOffset(i));
            cuda.memcpyAsync(dst, object.asSlice(plan.objectOffset(i), plan.length(i)), plan.length(i),
                    MemcpyKind.HOST_TO_DEVICE, stream);
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

    @Override
    public void close() {
        stream.close();
    }
}
