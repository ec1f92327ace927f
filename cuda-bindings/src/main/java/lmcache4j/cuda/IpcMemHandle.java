package lmcache4j.cuda;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * A {@code cudaIpcMemHandle_t}: 64 opaque bytes that let another process map device memory.
 * A value object; the bytes are copied in and out.
 */
public final class IpcMemHandle {
    /** {@code CUDA_IPC_HANDLE_SIZE}. */
    public static final int SIZE = 64;

    private final byte[] bytes;

    /** A handle from its 64 bytes, for example as received from another process. */
    public IpcMemHandle(byte[] bytes) {
        if (bytes.length != SIZE) {
            throw new IllegalArgumentException("a CUDA IPC handle is " + SIZE + " bytes, got " + bytes.length);
        }
        this.bytes = bytes.clone();
    }

    /** A copy of the handle's bytes. */
    public byte[] bytes() {
        return bytes.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcMemHandle other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        return "IpcMemHandle[" + HexFormat.of().formatHex(bytes, 0, 8) + "…]";
    }
}
