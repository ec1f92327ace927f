package lmcache4j.server.mp.wire;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

import lmcache4j.engine.controller.message.UniversalBuffer;

/**
 * A bounded msgpack reader over one argument frame. Every length a frame declares is checked
 * against the bytes the frame still holds before anything is allocated or skipped (an array
 * element or a map entry takes at least one byte each), so a hostile frame can make the decoder
 * allocate at most its own size. Every failure, including msgpack-core's own, comes out as an
 * {@link MpProtocolException} with reason {@link MpDropReason#BAD_ARGUMENT}.
 */
final class MpReader implements AutoCloseable {
    static {
        UniversalBuffer.select(); // before msgpack-core's first use: no sun.misc.Unsafe
    }

    private final MessageUnpacker in;
    private final long size;

    private MpReader(byte[] frame) {
        this.in = MessagePack.newDefaultUnpacker(frame);
        this.size = frame.length;
    }

    /** A reader over a whole frame; {@link #expectEnd()} checks that nothing trails its value. */
    static MpReader of(byte[] frame) {
        return new MpReader(frame);
    }

    static MpProtocolException bad(String message) {
        return new MpProtocolException(MpDropReason.BAD_ARGUMENT, message);
    }

    /** The bytes not read yet. */
    long remaining() {
        return size - in.getTotalReadBytes();
    }

    /** The type of the next value; a frame that ends here is an error. */
    ValueType nextType(String what) throws MpProtocolException {
        return call(() -> {
            if (!in.hasNext()) {
                throw bad(what + ": the frame ends where a value was expected");
            }
            return in.getNextFormat().getValueType();
        });
    }

    /** Consumes a nil and returns true, or leaves any other value and returns false. */
    boolean tryNil(String what) throws MpProtocolException {
        if (nextType(what) != ValueType.NIL) {
            return false;
        }
        call(() -> {
            in.unpackNil();
            return null;
        });
        return true;
    }

    /** A msgpack int in {@code [min, max]}. */
    long readLong(String what, long min, long max) throws MpProtocolException {
        ValueType type = nextType(what);
        if (type != ValueType.INTEGER) {
            throw bad(what + ": expected an int, got a msgpack " + type);
        }
        if (call(in::getNextFormat) == MessageFormat.UINT64) {
            BigInteger big = call(in::unpackBigInteger);
            if (big.bitLength() > 63) {
                throw bad(what + ": int " + big + " out of range (expected " + min + ".." + max + ")");
            }
            return checkRange(what, big.longValue(), min, max);
        }
        return checkRange(what, call(in::unpackLong), min, max);
    }

    private static long checkRange(String what, long value, long min, long max) throws MpProtocolException {
        if (value < min || value > max) {
            throw bad(what + ": int " + value + " out of range (expected " + min + ".." + max + ")");
        }
        return value;
    }

    /** A msgpack int or float (LMCache's {@code float} arguments accept both), as a double. */
    double readNumber(String what) throws MpProtocolException {
        ValueType type = nextType(what);
        if (type == ValueType.INTEGER) {
            return call(() -> in.getNextFormat() == MessageFormat.UINT64
                    ? in.unpackBigInteger().doubleValue() : (double) in.unpackLong());
        }
        if (type == ValueType.FLOAT) {
            return call(in::unpackDouble);
        }
        throw bad(what + ": expected an int or a float, got a msgpack " + type);
    }

    /** A msgpack bool. */
    boolean readBool(String what) throws MpProtocolException {
        ValueType type = nextType(what);
        if (type != ValueType.BOOLEAN) {
            throw bad(what + ": expected a bool, got a msgpack " + type);
        }
        return call(in::unpackBoolean);
    }

    /** A msgpack str of at most {@code maxBytes} bytes of valid UTF-8. */
    String readString(String what, int maxBytes) throws MpProtocolException {
        ValueType type = nextType(what);
        if (type != ValueType.STRING) {
            throw bad(what + ": expected a str, got a msgpack " + type);
        }
        int length = call(in::unpackRawStringHeader);
        checkPayload(what, length, maxBytes);
        byte[] bytes = call(() -> in.readPayload(length));
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new MpProtocolException(MpDropReason.BAD_ARGUMENT, what + ": str is not valid UTF-8", e);
        }
    }

    /** A msgpack bin of at most {@code maxBytes} bytes. */
    byte[] readBinary(String what, int maxBytes) throws MpProtocolException {
        ValueType type = nextType(what);
        if (type != ValueType.BINARY) {
            throw bad(what + ": expected bytes (msgpack bin), got a msgpack " + type);
        }
        int length = call(in::unpackBinaryHeader);
        checkPayload(what, length, maxBytes);
        return call(() -> in.readPayload(length));
    }

    /** An array header of at most {@code maxCount} elements, each of which the frame can hold. */
    int readArrayHeader(String what, int maxCount) throws MpProtocolException {
        ValueType type = nextType(what);
        if (type != ValueType.ARRAY) {
            throw bad(what + ": expected an array, got a msgpack " + type);
        }
        int count = call(in::unpackArrayHeader);
        if (count < 0 || count > maxCount) {
            throw bad(what + ": array of " + Integer.toUnsignedString(count) + " elements (at most " + maxCount + ")");
        }
        if (count > remaining()) {
            throw bad(what + ": array declares " + count + " elements but the frame has " + remaining() + " bytes left");
        }
        return count;
    }

    /** A map header whose entries the frame can hold. */
    int readMapHeader(String what) throws MpProtocolException {
        ValueType type = nextType(what);
        if (type != ValueType.MAP) {
            throw bad(what + ": expected a map, got a msgpack " + type);
        }
        int count = call(in::unpackMapHeader);
        if (count < 0 || 2L * count > remaining()) {
            throw bad(what + ": map declares " + Integer.toUnsignedString(count) + " entries but the frame has "
                    + remaining() + " bytes left");
        }
        return count;
    }

    /**
     * Skips one value of any type without recursion or allocation: the values still to skip are a
     * counter, and each container's declared size must fit in the bytes left.
     */
    void skipValue(String what) throws MpProtocolException {
        long pending = 1;
        while (pending > 0) {
            ValueType type = nextType(what);
            pending--;
            switch (type) {
                case ARRAY -> pending += readArrayHeader(what, Integer.MAX_VALUE);
                case MAP -> pending += 2L * readMapHeader(what);
                case STRING -> checkedSkipPayload(what, call(in::unpackRawStringHeader));
                case BINARY -> checkedSkipPayload(what, call(in::unpackBinaryHeader));
                case EXTENSION -> checkedSkipPayload(what, call(() -> in.unpackExtensionTypeHeader().getLength()));
                default -> call(() -> {
                    in.skipValue();
                    return null;
                });
            }
            if (pending > remaining()) {
                throw bad(what + ": containers declare " + pending + " values but the frame has " + remaining()
                        + " bytes left");
            }
        }
    }

    /** Checks that the frame holds nothing after the value just read. */
    void expectEnd(String what) throws MpProtocolException {
        if (call(in::hasNext)) {
            throw bad(what + ": " + remaining() + " bytes after the value");
        }
    }

    private void checkPayload(String what, int length, int maxBytes) throws MpProtocolException {
        if (length < 0 || length > maxBytes) {
            throw bad(what + ": " + Integer.toUnsignedString(length) + " bytes (at most " + maxBytes + ")");
        }
        if (length > remaining()) {
            throw bad(what + ": declares " + length + " bytes but the frame has " + remaining() + " left");
        }
    }

    private void checkedSkipPayload(String what, int length) throws MpProtocolException {
        checkPayload(what, length, Integer.MAX_VALUE);
        call(() -> {
            in.readPayloadAsReference(length);
            return null;
        });
    }

    @Override
    public void close() {
        try {
            in.close();
        } catch (IOException e) {
            // A reader over a byte array holds no resource; close cannot really fail.
        }
    }

    /** One step of msgpack-core, its exceptions turned into a protocol violation. */
    private <T> T call(Step<T> step) throws MpProtocolException {
        try {
            return step.run();
        } catch (IOException | MessagePackException e) {
            throw new MpProtocolException(MpDropReason.BAD_ARGUMENT, "malformed msgpack: " + e.getMessage(), e);
        }
    }

    @FunctionalInterface
    private interface Step<T> {
        T run() throws IOException, MpProtocolException;
    }
}
