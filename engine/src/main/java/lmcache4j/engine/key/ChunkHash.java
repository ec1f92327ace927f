package lmcache4j.engine.key;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A chunk's prefix-chain hash, in one of two forms ({@link StorageKeys}): LMCache's 64-bit integer
 * ({@link #ofLong}, written in keys as lowercase hex without padding, as Python's
 * {@code f"{chunk_hash:x}"}), or digest bytes (32 for vLLM's {@code sha256_cbor}, written as
 * lowercase hex of every byte, as {@code bytes.hex()}). Immutable; the two forms are never equal.
 */
public final class ChunkHash {
    private static final HexFormat HEX = HexFormat.of();
    private static final VarHandle FIRST_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle FIRST_LONG_BE =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private final byte[] bytes;
    /** LMCache's integer form: {@link #bytes} are the integer's 8 big-endian bytes. */
    private final boolean integer;
    private final int hashCode;

    private ChunkHash(byte[] bytes) {
        this(bytes, false);
    }

    private ChunkHash(byte[] bytes, boolean integer) {
        if (bytes.length == 0) {
            throw new IllegalArgumentException("a chunk hash has at least one byte");
        }
        this.bytes = bytes;
        this.integer = integer;
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

    /**
     * LMCache's integer chunk hash (since its token database folds hashes to ints): {@code value}
     * read as an unsigned 64-bit integer.
     */
    public static ChunkHash ofLong(long value) {
        byte[] b = new byte[Long.BYTES];
        for (int i = 0; i < Long.BYTES; i++) {
            b[i] = (byte) (value >>> (56 - 8 * i));
        }
        return new ChunkHash(b, true);
    }

    /**
     * The hash field of a key string, in whichever form it was written: at most 16 hex digits
     * without a leading zero (or {@code 0} itself) is LMCache's integer form, anything else the
     * digest form ({@link #fromHex}). {@code parseKeyHex(h.toHex()).equals(h)} for every hash of
     * either form whose digest, if any, has more than 8 bytes or a leading nonzero digit.
     *
     * @throws IllegalArgumentException naming the field when it is no hex of either form
     */
    public static ChunkHash parseKeyHex(String hex) {
        if (!hex.isEmpty() && hex.length() <= 16 && (hex.length() == 1 || hex.charAt(0) != '0')) {
            try {
                return ofLong(Long.parseUnsignedLong(hex, 16));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("chunk hash '" + hex + "' is not hexadecimal", e);
            }
        }
        return fromHex(hex);
    }

    /** Digest bytes written as lowercase hex, two digits a byte ({@code bytes.hex()}). */
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

    /** Whether this is LMCache's integer form ({@link #ofLong}). */
    public boolean isInteger() {
        return integer;
    }

    /**
     * The integer of {@link #ofLong}, as a long's bits.
     *
     * @throws IllegalStateException for a digest
     */
    public long asLong() {
        if (!integer) {
            throw new IllegalStateException("chunk hash " + toHex() + " is a digest, not LMCache's integer form");
        }
        return (long) FIRST_LONG_BE.get(bytes, 0);
    }

    /** A copy of the bytes (the integer's 8 big-endian bytes for the integer form). */
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

    /** Lowercase hex, no prefix: the integer without padding, or every digest byte. */
    public String toHex() {
        return integer ? Long.toHexString(asLong()) : HEX.formatHex(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ChunkHash other && hashCode == other.hashCode && integer == other.integer
                && Arrays.equals(bytes, other.bytes);
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
