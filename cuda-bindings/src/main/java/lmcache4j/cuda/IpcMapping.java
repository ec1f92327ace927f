package lmcache4j.cuda;

import java.lang.foreign.MemorySegment;

import lmcache4j.cuda.internal.cudart.cudart_h;

/** Device memory of another process mapped here; {@link #close()} unmaps it ({@code cudaIpcCloseMemHandle}). */
public final class IpcMapping extends NativeResource {
    private final CudaRuntime runtime;
    private final MemorySegment pointer;

    IpcMapping(CudaRuntime runtime, MemorySegment pointer) {
        this.runtime = runtime;
        this.pointer = pointer;
    }

    /** The device address of the mapping. */
    public MemorySegment pointer() {
        ensureOpen();
        return pointer;
    }

    @Override
    protected void release() {
        runtime.check(cudart_h.cudaIpcCloseMemHandle(pointer), "cudaIpcCloseMemHandle(" + this + ")");
    }

    @Override
    public String toString() {
        return "IpcMapping[0x" + Long.toHexString(pointer.address()) + "]";
    }
}
