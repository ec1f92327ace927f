package lmcache4j.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import lmcache4j.cuda.internal.cudart.cudart_h;

/** A CUDA event; {@link #close()} destroys it ({@code cudaEventDestroy}). */
public final class CudaEvent extends NativeResource {
    private final CudaRuntime runtime;
    private final MemorySegment handle;

    CudaEvent(CudaRuntime runtime, MemorySegment handle) {
        this.runtime = runtime;
        this.handle = handle;
    }

    MemorySegment handle() {
        ensureOpen();
        return handle;
    }

    /** Records this event on {@code stream} ({@code cudaEventRecord}). */
    public void record(CudaStream stream) {
        runtime.check(cudart_h.cudaEventRecord(handle(), stream.handle()), "cudaEventRecord(" + this + ", " + stream + ")");
    }

    /** Waits until the work before the recorded point is done ({@code cudaEventSynchronize}). */
    public void synchronize() {
        runtime.check(cudart_h.cudaEventSynchronize(handle()), "cudaEventSynchronize(" + this + ")");
    }

    /** Milliseconds from {@code start} to this event; both must have timing on and have completed. */
    public float elapsedMillisSince(CudaEvent start) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ms = arena.allocate(ValueLayout.JAVA_FLOAT);
            runtime.check(cudart_h.cudaEventElapsedTime(ms, start.handle(), handle()),
                    "cudaEventElapsedTime(" + start + ", " + this + ")");
            return ms.get(ValueLayout.JAVA_FLOAT, 0);
        }
    }

    @Override
    protected void release() {
        runtime.check(cudart_h.cudaEventDestroy(handle), "cudaEventDestroy(" + this + ")");
    }

    @Override
    public String toString() {
        return "CudaEvent[0x" + Long.toHexString(handle.address()) + "]";
    }
}
