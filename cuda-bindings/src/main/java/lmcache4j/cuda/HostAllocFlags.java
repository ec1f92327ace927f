package lmcache4j.cuda;

import lmcache4j.cuda.internal.cudart.cudart_h;

/** Flags for {@link CudaRuntime#allocatePinned(long, int)}: {@code cudaHostAlloc*} values, OR-ed together. */
public final class HostAllocFlags {
    public static final int DEFAULT = cudart_h.cudaHostAllocDefault();
    /** Pinned for every CUDA context, not just the current one. */
    public static final int PORTABLE = cudart_h.cudaHostAllocPortable();
    /** Mapped into the device address space ({@link CudaRuntime#hostDevicePointer}). */
    public static final int MAPPED = cudart_h.cudaHostAllocMapped();
    /** Write-combined: fast host writes and device reads, very slow host reads. */
    public static final int WRITE_COMBINED = cudart_h.cudaHostAllocWriteCombined();

    private HostAllocFlags() {
    }
}
