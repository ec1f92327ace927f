package lmcache4j.cuda;

import lmcache4j.cuda.internal.cudart.cudart_h;

/** {@code enum cudaMemcpyKind}, with the runtime's values. */
public enum MemcpyKind {
    HOST_TO_HOST(cudart_h.cudaMemcpyHostToHost()),
    HOST_TO_DEVICE(cudart_h.cudaMemcpyHostToDevice()),
    DEVICE_TO_HOST(cudart_h.cudaMemcpyDeviceToHost()),
    DEVICE_TO_DEVICE(cudart_h.cudaMemcpyDeviceToDevice()),
    /** Direction inferred from the pointers (unified virtual addressing). */
    DEFAULT(cudart_h.cudaMemcpyDefault());

    private final int code;

    MemcpyKind(int code) {
        this.code = code;
    }

    /** The {@code cudaMemcpyKind} value. */
    public int code() {
        return code;
    }
}
