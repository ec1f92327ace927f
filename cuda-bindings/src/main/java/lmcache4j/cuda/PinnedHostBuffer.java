package lmcache4j.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import lmcache4j.cuda.internal.cudart.cudart_h;

/**
 * Page-locked host memory from {@code cudaHostAlloc}. {@link #segment()} is readable and writable
 * from Java until {@link #close()}, which first invalidates every view of it (through its arena)
 * and then frees it with {@code cudaFreeHost}: a late access throws instead of touching freed
 * memory.
 */
public final class PinnedHostBuffer extends NativeResource {
    private final CudaRuntime runtime;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment segment;

    PinnedHostBuffer(CudaRuntime runtime, MemorySegment address, long byteSize) {
        this.runtime = runtime;
        this.segment = address.reinterpret(byteSize, arena, null);
    }

    /** The memory, usable from Java and by CUDA copies until close. */
    public MemorySegment segment() {
        ensureOpen();
        return segment;
    }

    public long byteSize() {
        return segment.byteSize();
    }

    @Override
    protected void release() {
        MemorySegment address = MemorySegment.ofAddress(segment.address());
        arena.close();
        runtime.check(cudart_h.cudaFreeHost(address), "cudaFreeHost(" + this + ")");
    }

    @Override
    public String toString() {
        return "PinnedHostBuffer[0x" + Long.toHexString(segment.address()) + ", " + segment.byteSize() + " bytes]";
    }
}
