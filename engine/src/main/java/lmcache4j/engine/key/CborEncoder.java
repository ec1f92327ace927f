package lmcache4j.engine.key;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Canonical CBOR (RFC 8949 §4.2.1, "preferred serialization"), only as far as vLLM's
 * {@code sha256_cbor} inputs need: unsigned and negative integers, byte strings, text strings,
 * definite-length arrays and null. Every head takes its shortest form, which is what Python's
 * {@code cbor2.dumps(obj, canonical=True)} writes for these types.
 *
 * <p>Writes into one growable buffer that is reused across encodings: {@link #reset()} and encode
 * again. The buffer only grows (to the largest input seen), so steady-state encoding allocates
 * nothing. Not thread-safe.
 */
final class CborEncoder {
    static final int MAJOR_UNSIGNED = 0;
    static final int MAJOR_NEGATIVE = 1;
    static final int MAJOR_BYTES = 2;
    static final int MAJOR_TEXT = 3;
    static final int MAJOR_ARRAY = 4;
    static final byte NULL = (byte) 0xf6;

    /** The most bytes one int takes: a head byte and four value bytes. */
    private static final int MAX_INT_BYTES = 5;
    /** The most bytes one head takes: a head byte and eight value bytes. */
    private static final int MAX_HEAD_BYTES = 9;

    /** Big-endian 8-byte stores into the buffer: one store writes a token's head and value. */
    private static final VarHandle BE_LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    /**
     * For an unsigned value {@code v >= 24}, indexed by {@code numberOfLeadingZeros(v)}: the head
     * byte in bits 56-63 (major type 0 and the value's byte count: 24 = 1, 25 = 2, 26 = 4), the
     * shift that puts the value's bytes right below it in bits 8-15, and the encoding's total byte
     * count in bits 0-7. The two low bytes land past the encoding, where the next write overwrites
     * them, so the template needs no masking.
     */
    private static final long[] UINT_TEMPLATE = new long[33];

    static {
        for (int lz = 0; lz <= 32; lz++) {
            int bits = 32 - lz;
            int valueBytes = bits <= 8 ? 1 : bits <= 16 ? 2 : 4;
            int info = valueBytes == 1 ? 24 : valueBytes == 2 ? 25 : 26;
            int shift = 56 - 8 * valueBytes;
            UINT_TEMPLATE[lz] = ((long) (MAJOR_UNSIGNED << 5 | info) << 56) | (long) shift << 8 | (1 + valueBytes);
        }
    }

    private byte[] buf;
    private int pos;

    CborEncoder(int initialCapacity) {
        buf = new byte[Math.max(initialCapacity, 64)];
    }

    /** Forgets what was written; the buffer is kept. */
    void reset() {
        pos = 0;
    }

    /** The encoding so far is {@code buffer()[0, length())}; valid until the next write. */
    byte[] buffer() {
        return buf;
    }

    int length() {
        return pos;
    }

    /** A copy of the encoding so far. */
    byte[] toByteArray() {
        return Arrays.copyOf(buf, pos);
    }

    /** The head of an array of {@code size} items, which the caller writes next. */
    void arrayHead(long size) {
        ensure(MAX_HEAD_BYTES);
        head(MAJOR_ARRAY, size);
    }

    void writeNull() {
        ensure(1);
        buf[pos++] = NULL;
    }

    /** An integer: major type 0 for {@code v >= 0}, else major type 1 carrying {@code -1 - v}. */
    void writeInt(int v) {
        ensure(MAX_INT_BYTES);
        putInt(v);
    }

    /** An integer read from {@code bits} as unsigned 64-bit (major type 0, 8 bytes when the top bit is set). */
    void writeUnsigned(long bits) {
        ensure(MAX_HEAD_BYTES);
        head(MAJOR_UNSIGNED, bits);
    }

    /** A byte string holding the hash's bytes. */
    void writeBytes(ChunkHash hash) {
        int n = hash.length();
        ensure(MAX_HEAD_BYTES + n);
        head(MAJOR_BYTES, n);
        for (int i = 0; i < n; i++) {
            buf[pos++] = hash.byteAt(i);
        }
    }

    /** A text string: the UTF-8 bytes of {@code s} (Python's str). Not on a hot path: it allocates. */
    void writeText(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        ensure(MAX_HEAD_BYTES + utf8.length);
        head(MAJOR_TEXT, utf8.length);
        System.arraycopy(utf8, 0, buf, pos, utf8.length);
        pos += utf8.length;
    }

    /**
     * An array of the ints {@code tokens[from, to)}: the hot path. Token ids are mostly 3- or
     * 5-byte integers at random, so instead of a branch per size (mispredicted half the time) each
     * token is one table lookup and one 8-byte store; bytes past the token's end are scratch that
     * the next write covers.
     */
    void writeIntArray(int[] tokens, int from, int to) {
        ensure(maxIntArrayBytes(to - from));
        pos = intArrayAt(buf, pos, tokens, from, to);
    }

    /**
     * Room {@link #intArrayAt} may touch for {@code n} ints: the head, five bytes an int, and the
     * last 8-byte store's overhang past the encoding's end.
     */
    static long maxIntArrayBytes(int n) {
        return MAX_HEAD_BYTES + (long) n * MAX_INT_BYTES + Long.BYTES;
    }

    /**
     * Writes the array of {@code tokens[from, to)} at {@code b[p]} and returns the position after
     * it; {@code b} must have {@link #maxIntArrayBytes} bytes from {@code p}.
     */
    static int intArrayAt(byte[] b, int p, int[] tokens, int from, int to) {
        p = headAt(b, p, MAJOR_ARRAY, to - from);
        for (int i = from; i < to; i++) {
            int v = tokens[i];
            if (v >= 24) {
                long t = UINT_TEMPLATE[Integer.numberOfLeadingZeros(v)];
                BE_LONG.set(b, p, t | (long) v << (int) (t >>> 8 & 0xff));
                p += (int) t & 0xff;
            } else if (v >= 0) {
                b[p++] = (byte) v;
            } else { // negative: not a token id, but encoded as CBOR would
                p = headAt(b, p, MAJOR_NEGATIVE, ~v & 0xffff_ffffL); // -1 - v, which fits an unsigned 32-bit value
            }
        }
        return p;
    }

    private void putInt(int v) {
        if (v >= 0) {
            head(MAJOR_UNSIGNED, v);
        } else {
            head(MAJOR_NEGATIVE, ~v & 0xffff_ffffL); // -1 - v, which fits an unsigned 32-bit value
        }
    }

    private void head(int major, long value) {
        pos = headAt(buf, pos, major, value);
    }

    /** Shortest head for {@code value} (non-negative, or an unsigned 64-bit pattern) at {@code b[p]}; returns the next position. */
    static int headAt(byte[] b, int p, int major, long value) {
        int mt = major << 5;
        if (value >= 0 && value < 24) {
            b[p++] = (byte) (mt | (int) value);
        } else if (value >= 0 && value < 0x100) {
            b[p++] = (byte) (mt | 24);
            b[p++] = (byte) value;
        } else if (value >= 0 && value < 0x1_0000) {
            b[p++] = (byte) (mt | 25);
            b[p++] = (byte) (value >>> 8);
            b[p++] = (byte) value;
        } else if (value >= 0 && value < 0x1_0000_0000L) {
            b[p++] = (byte) (mt | 26);
            b[p++] = (byte) (value >>> 24);
            b[p++] = (byte) (value >>> 16);
            b[p++] = (byte) (value >>> 8);
            b[p++] = (byte) value;
        } else {
            b[p++] = (byte) (mt | 27);
            for (int shift = 56; shift >= 0; shift -= 8) {
                b[p++] = (byte) (value >>> shift);
            }
        }
        return p;
    }

    private void ensure(long extra) {
        long needed = pos + extra;
        if (needed > buf.length) {
            if (needed > Integer.MAX_VALUE - 16) {
                throw new IllegalArgumentException("a CBOR encoding of " + needed + " bytes is too large for one buffer");
            }
            buf = Arrays.copyOf(buf, (int) Math.max(needed, Math.min(Integer.MAX_VALUE - 16, 2L * buf.length)));
        }
    }
}
