package lmcache4j.cuda;

import java.lang.foreign.MemorySegment;

import lmcache4j.cuda.internal.cudart.cudart_h;

/** A CUDA stream; {@link #close()} destroys it ({@code cudaStreamDestroy}). */
public final class CudaStream extends NativeResource {
    private final CudaRuntime runtime;
    private final MemorySegment handle;

    CudaStream(CudaRuntime runtime, MemorySegment handle) {
        this.runtime = runtime;
        this.handle = handle;
    }

    MemorySegment handle() {
        ensureOpen();
        return handle;
    }

    /** Waits until all work queued on this stream is done ({@code cudaStreamSynchronize}). */
    public void synchronize() {
        runtime.check(cudart_h.cudaStreamSynchronize(handle()), "cudaStreamSynchronize(" + this + ")");
    }

    /** Makes later work on this stream wait for {@code event} ({@code cudaStreamWaitEvent}). */
    public void waitFor(CudaEvent event) {
        runtime.check(cudart_h.cudaStreamWaitEvent(handle(), event.handle(), 0),
                "cudaStreamWaitEvent(" + this + ", " + event + ")");
    }

    @Override
    protected void release() {
        runtime.check(cudart_h.cudaStreamDestroy(handle), "cudaStreamDestroy(" + this + ")");
    }

    @Override
    public String toString() {
        return "CudaStream[0x" + Long.toHexString(handle.address()) + "]";
    }
}
