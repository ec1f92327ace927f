package lmcache4j.engine.key;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A chunk's prefix-chain hash: the digest bytes (32 for vLLM's {@code sha256_cbor}). Immutable;
 * written in keys as lowercase hex without {@code 0x}.
 */
public final class ChunkHash {
    private static final HexFormat HEX = HexFormat.of();
    private static final VarHandle FIRST_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private final byte[] bytes;
    private final int hashCode;

    private ChunkHash(byte[] bytes) {
        if (bytes.length == 0) {
            throw new IllegalArgumentException("a chunk hash has at least one byte");
        }
        this.bytes = bytes;
        // A digest's bytes are already uniform: eight of them make a good hash code, and it costs one
        // load where Arrays.hashCode was a 32-step multiply chain on every hash of the prefix chain.
        this.hashCode = bytes.length >= Long.BYTES ? Long.hashCode((long) FIRST_LONG.get(bytes, 0)) : Arrays.hashCode(bytes);
    }

    /** A hash of these bytes (copied). */
    public static ChunkHash of(byte[] bytes) {
        return new ChunkHash(bytes.clone());
    }

    /** Takes ownership of {@code bytes} without a copy: the caller must not change them. */
    static ChunkHash wrap(byte[] bytes) {
        return new ChunkHash(bytes);
    }

    /** The hash written as lowercase hex, as in a key string. */
    public static ChunkHash fromHex(String hex) {
        if (hex.isEmpty() || hex.length() % 2 != 0) {
            throw new IllegalArgumentException("chunk hash '" + hex + "' is not an even number of hex digits");
        }
        try {
            return new ChunkHash(HEX.parseHex(hex));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("chunk hash '" + hex + "' is not hexadecimal", e);
        }
    }

    /** A copy of the bytes. */
    public byte[] toBytes() {
        return bytes.clone();
    }

    /** Byte count. */
    public int length() {
        return bytes.length;
    }

    /** Byte {@code i}, without a copy. */
    public byte byteAt(int i) {
        return bytes[i];
    }

    /** Copies the bytes into {@code dst} at {@code at}. */
    void copyTo(byte[] dst, int at) {
        System.arraycopy(bytes, 0, dst, at, bytes.length);
    }

    /** Lowercase hex, no prefix. */
    public String toHex() {
        return HEX.formatHex(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ChunkHash other && hashCode == other.hashCode && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return hashCode;
    }

    @Override
    public String toString() {
        return toHex();
    }
}
