package lmcache4j.engine.controller.message;

import java.io.IOException;
import java.io.UncheckedIOException;

import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Writes msgpack the way msgspec does: the smallest integer and string encodings, float64 for
 * floats, and chunk keys as unsigned 64-bit integers. Writing to memory cannot fail, so the
 * packer's {@code IOException} never escapes (it would be a bug: {@link UncheckedIOException}).
 */
final class MsgWriter {
    static {
        UniversalBuffer.select();
    }

    private final MessageBufferPacker out = MessagePack.newDefaultBufferPacker();
    private final byte[] u64 = new byte[9];

    MsgWriter mapHeader(int entries) {
        try {
            out.packMapHeader(entries);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    MsgWriter arrayHeader(int elements) {
        try {
            out.packArrayHeader(elements);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    MsgWriter str(String s) {
        try {
            out.packString(s);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    MsgWriter nil() {
        try {
            out.packNil();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    MsgWriter i64(long v) {
        try {
            out.packLong(v);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    /** A chunk key: its 64 bits as an unsigned integer (uint64 when the top bit is set). */
    MsgWriter key64(long bits) {
        if (bits >= 0) {
            return i64(bits);
        }
        u64[0] = (byte) 0xcf;
        for (int i = 0; i < 8; i++) {
            u64[1 + i] = (byte) (bits >>> (56 - 8 * i));
        }
        try {
            out.writePayload(u64);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    MsgWriter bool(boolean v) {
        try {
            out.packBoolean(v);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    MsgWriter f64(double v) {
        try {
            out.packDouble(v);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    MsgWriter bin(byte[] v) {
        try {
            out.packBinaryHeader(v.length);
            out.writePayload(v);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    byte[] toByteArray() {
        return out.toByteArray();
    }
}
