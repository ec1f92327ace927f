package lmcache4j.cuda;

import lmcache4j.cuda.internal.cudart.cudart_h;

/** Flags for {@link CudaRuntime#registerHost(java.lang.foreign.MemorySegment, int)}: {@code cudaHostRegister*} values. */
public final class HostRegisterFlags {
    public static final int DEFAULT = cudart_h.cudaHostRegisterDefault();
    /** Pinned for every CUDA context. */
    public static final int PORTABLE = cudart_h.cudaHostRegisterPortable();
    /** Mapped into the device address space. */
    public static final int MAPPED = cudart_h.cudaHostRegisterMapped();

    private HostRegisterFlags() {
    }
}
