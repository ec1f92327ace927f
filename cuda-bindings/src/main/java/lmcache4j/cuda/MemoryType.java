package lmcache4j.cuda;

import lmcache4j.cuda.internal.cudart.cudart_h;

/** {@code enum cudaMemoryType}: where a pointer's memory lives. */
public enum MemoryType {
    UNREGISTERED(cudart_h.cudaMemoryTypeUnregistered()),
    HOST(cudart_h.cudaMemoryTypeHost()),
    DEVICE(cudart_h.cudaMemoryTypeDevice()),
    MANAGED(cudart_h.cudaMemoryTypeManaged());

    private final int code;

    MemoryType(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    /** The type with {@code code}; an unknown value is an error naming it. */
    public static MemoryType of(int code) {
        for (MemoryType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown cudaMemoryType " + code);
    }
}
