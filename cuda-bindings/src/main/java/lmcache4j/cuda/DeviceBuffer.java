package lmcache4j.cuda;

import java.lang.foreign.MemorySegment;

import lmcache4j.cuda.internal.cudart.cudart_h;

/**
 * Device memory from {@code cudaMalloc}; {@link #close()} frees it with {@code cudaFree}. The
 * pointer is a zero-length segment: device memory cannot be read from the host.
 */
public final class DeviceBuffer extends NativeResource {
    private final CudaRuntime runtime;
    private final MemorySegment pointer;
    private final long byteSize;

    DeviceBuffer(CudaRuntime runtime, MemorySegment pointer, long byteSize) {
        this.runtime = runtime;
        this.pointer = pointer;
        this.byteSize = byteSize;
    }

    /** The device address, for copies; throws after close. */
    public MemorySegment pointer() {
        ensureOpen();
        return pointer;
    }

    /** The device address {@code offset} bytes in, checked against the size. */
    public MemorySegment pointer(long offset) {
        ensureOpen();
        if (offset < 0 || offset > byteSize) {
            throw new IndexOutOfBoundsException("offset " + offset + " outside device buffer of " + byteSize + " bytes");
        }
        return MemorySegment.ofAddress(pointer.address() + offset);
    }

    public long byteSize() {
        return byteSize;
    }

    @Override
    protected void release() {
        runtime.check(cudart_h.cudaFree(pointer), "cudaFree(" + this + ")");
    }

    @Override
    public String toString() {
        return "DeviceBuffer[0x" + Long.toHexString(pointer.address()) + ", " + byteSize + " bytes]";
    }
}
