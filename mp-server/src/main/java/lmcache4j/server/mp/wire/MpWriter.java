package lmcache4j.server.mp.wire;

import java.io.IOException;
import java.io.UncheckedIOException;

import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import lmcache4j.engine.controller.message.UniversalBuffer;

/**
 * Writes msgpack the way msgspec 0.22.0 does (docs/design/mp-server.md §4): the smallest int
 * encoding, float64 for floats, the smallest str/bin/array/map header. msgpack-core's packer
 * already picks those forms; this wrapper only hides its {@link IOException}, which an in-memory
 * buffer never throws.
 */
final class MpWriter {
    static {
        UniversalBuffer.select(); // before msgpack-core's first use: no sun.misc.Unsafe
    }

    private final MessageBufferPacker out = MessagePack.newDefaultBufferPacker();

    MpWriter mapHeader(int entries) {
        return run(() -> out.packMapHeader(entries));
    }

    MpWriter arrayHeader(int elements) {
        return run(() -> out.packArrayHeader(elements));
    }

    MpWriter key(String name) {
        return string(name);
    }

    MpWriter string(String value) {
        return run(() -> out.packString(value));
    }

    MpWriter integer(long value) {
        return run(() -> out.packLong(value));
    }

    /** An unsigned 32-bit value held in an int (a token id). */
    MpWriter unsigned32(int value) {
        return run(() -> out.packLong(Integer.toUnsignedLong(value)));
    }

    MpWriter float64(double value) {
        return run(() -> out.packDouble(value));
    }

    MpWriter bool(boolean value) {
        return run(() -> out.packBoolean(value));
    }

    MpWriter nil() {
        return run(out::packNil);
    }

    MpWriter binary(byte[] value) {
        return run(() -> {
            out.packBinaryHeader(value.length);
            out.writePayload(value);
        });
    }

    byte[] toByteArray() {
        return out.toByteArray();
    }

    private MpWriter run(Step step) {
        try {
            step.run();
            return this;
        } catch (IOException e) {
            throw new UncheckedIOException("msgpack into memory failed", e);
        }
    }

    @FunctionalInterface
    private interface Step {
        void run() throws IOException;
    }
}
