package lmcache4j.engine.controller.message;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessageInsufficientBufferException;
import org.msgpack.core.MessageSizeException;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * A strict, bounded reader of one msgpack frame: every declared length is checked against the
 * bytes the frame has left before anything is allocated, so a hostile header (a billion-element
 * array in ten bytes) fails at once instead of exhausting memory. Errors are
 * {@link MalformedMessageException}s that say what was expected where.
 */
final class MsgReader implements AutoCloseable {
    /** Deepest nesting accepted in free-form values (heartbeat command {@code args}). */
    static final int MAX_ANY_DEPTH = 16;

    static {
        UniversalBuffer.select();
    }

    private final MessageUnpacker in;
    private final int frameLength;
    private final byte[] nameScratch = new byte[64];
    private final byte[] u64Scratch = new byte[9];
    private CharsetDecoder utf8;

    MsgReader(byte[] frame) {
        this.in = MessagePack.newDefaultUnpacker(frame);
        this.frameLength = frame.length;
    }

    int remaining() {
        return frameLength - (int) in.getTotalReadBytes();
    }

    boolean atEnd() throws MalformedMessageException {
        try {
            return !in.hasNext();
        } catch (IOException | MessagePackException e) {
            throw malformed("end of frame", e);
        }
    }

    private ValueType peek(String what) throws MalformedMessageException {
        try {
            if (!in.hasNext()) {
                throw new MalformedMessageException("frame ends where " + what + " was expected");
            }
            return in.getNextFormat().getValueType();
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    private MessageFormat format(String what) throws MalformedMessageException {
        peek(what);
        try {
            return in.getNextFormat();
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    private MalformedMessageException mistyped(String what, ValueType found) {
        return new MalformedMessageException(what + ": found a msgpack " + found.name().toLowerCase());
    }

    private static MalformedMessageException malformed(String what, Exception e) {
        if (e instanceof MessageSizeException) {
            return new MalformedMessageException(what + ": declared length is beyond 2^31-1 (too large for any frame)", e);
        }
        if (e instanceof MessageInsufficientBufferException) {
            return new MalformedMessageException("frame ends inside " + what, e);
        }
        String detail = e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        return new MalformedMessageException("bad msgpack at " + what + ": " + detail, e);
    }

    /** A map header; its entry count must fit in the bytes left (two bytes per entry at least). */
    int mapHeader(String what) throws MalformedMessageException {
        ValueType t = peek(what);
        if (t != ValueType.MAP) {
            throw mistyped(what + " must be a map", t);
        }
        try {
            int n = in.unpackMapHeader();
            if (n < 0 || (long) n * 2 > remaining()) {
                throw new MalformedMessageException(what + ": map declares " + Integer.toUnsignedString(n)
                        + " entries but the frame has " + remaining() + " bytes left");
            }
            return n;
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    /** An array header; its element count must fit in the bytes left (one byte per element at least). */
    int arrayHeader(String what) throws MalformedMessageException {
        ValueType t = peek(what);
        if (t != ValueType.ARRAY) {
            throw mistyped(what + " must be an array", t);
        }
        try {
            int n = in.unpackArrayHeader();
            if (n < 0 || n > remaining()) {
                throw new MalformedMessageException(what + ": array declares " + Integer.toUnsignedString(n)
                        + " elements but the frame has " + remaining() + " bytes left");
            }
            return n;
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    boolean peekIsMap(String what) throws MalformedMessageException {
        return peek(what) == ValueType.MAP;
    }

    /** Consumes a nil and says so, or leaves a non-nil value in place. */
    boolean nil(String what) throws MalformedMessageException {
        if (peek(what) != ValueType.NIL) {
            return false;
        }
        try {
            in.unpackNil();
            return true;
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    private int stringLength(String what) throws MalformedMessageException {
        ValueType t = peek(what);
        if (t != ValueType.STRING) {
            throw mistyped(what + " must be a string", t);
        }
        try {
            int n = in.unpackRawStringHeader();
            if (n < 0 || n > remaining()) {
                throw new MalformedMessageException(what + ": string declares " + Integer.toUnsignedString(n)
                        + " bytes but the frame has " + remaining() + " bytes left");
            }
            return n;
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    /** A UTF-8 string (invalid UTF-8 is malformed, as msgspec has it). */
    String str(String what) throws MalformedMessageException {
        int n = stringLength(what);
        try {
            byte[] bytes = in.readPayload(n);
            if (utf8 == null) {
                utf8 = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT);
            }
            CharBuffer chars = utf8.reset().decode(ByteBuffer.wrap(bytes));
            return chars.toString();
        } catch (CharacterCodingException e) {
            throw new MalformedMessageException(what + ": string is not valid UTF-8", e);
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    /**
     * A map key, matched against {@code names} without building a string: its index, or -1 for a
     * key not in the list (which the caller skips).
     */
    int key(byte[][] names, String what) throws MalformedMessageException {
        int n = stringLength(what);
        try {
            if (n > nameScratch.length) {
                in.readPayload(n); // longer than any field name: not one of ours
                return -1;
            }
            in.readPayload(nameScratch, 0, n);
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
        for (int i = 0; i < names.length; i++) {
            if (names[i].length == n && Arrays.equals(names[i], 0, n, nameScratch, 0, n)) {
                return i;
            }
        }
        return -1;
    }

    /** Whether the next key equals {@code name} (consumes the key either way). */
    boolean keyIs(byte[] name, String what) throws MalformedMessageException {
        return key(new byte[][] {name}, what) == 0;
    }

    /**
     * An integer in [-2^63, 2^64) as its 64-bit pattern; {@code signed} rejects values of 2^63 and
     * above, which have no Java {@code long}.
     */
    private long integer(String what, boolean signed) throws MalformedMessageException {
        MessageFormat f = format(what);
        if (f.getValueType() != ValueType.INTEGER) {
            throw mistyped(what + " must be an integer", f.getValueType());
        }
        try {
            if (f == MessageFormat.UINT64) {
                in.readPayload(u64Scratch, 0, 9);
                long bits = 0;
                for (int i = 1; i < 9; i++) {
                    bits = (bits << 8) | (u64Scratch[i] & 0xff);
                }
                if (signed && bits < 0) {
                    throw new MalformedMessageException(what + ": " + Long.toUnsignedString(bits)
                            + " is out of range (at most " + Long.MAX_VALUE + ")");
                }
                return bits;
            }
            return in.unpackLong();
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    /** A signed 64-bit integer. */
    long i64(String what) throws MalformedMessageException {
        return integer(what, true);
    }

    /** A chunk key: any msgpack integer in [-2^63, 2^64), kept as its 64-bit pattern. */
    long key64(String what) throws MalformedMessageException {
        return integer(what, false);
    }

    /** A 32-bit integer. */
    int i32(String what) throws MalformedMessageException {
        long v = integer(what, true);
        if (v != (int) v) {
            throw new MalformedMessageException(what + ": " + v + " is out of the 32-bit range");
        }
        return (int) v;
    }

    boolean bool(String what) throws MalformedMessageException {
        ValueType t = peek(what);
        if (t != ValueType.BOOLEAN) {
            throw mistyped(what + " must be a boolean", t);
        }
        try {
            return in.unpackBoolean();
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    /** A float; integers are accepted too, as msgspec accepts them for float fields. */
    double f64(String what) throws MalformedMessageException {
        ValueType t = peek(what);
        try {
            if (t == ValueType.FLOAT) {
                return in.unpackDouble();
            }
            if (t == ValueType.INTEGER) {
                return (double) i64(what);
            }
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
        throw mistyped(what + " must be a float", t);
    }

    /** Skips one value of any type (an unknown field), bounded by the frame. */
    void skip(String what) throws MalformedMessageException {
        try {
            if (!in.hasNext()) {
                throw new MalformedMessageException("frame ends where " + what + " was expected");
            }
            in.skipValue();
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    /**
     * Any msgpack value as a Java object ({@code null}, Boolean, Long, Double, String, byte[],
     * List, Map with String keys), nested at most {@link #MAX_ANY_DEPTH} deep.
     */
    Object any(String what, int depth) throws MalformedMessageException {
        if (depth > MAX_ANY_DEPTH) {
            throw new MalformedMessageException(what + ": nested deeper than " + MAX_ANY_DEPTH);
        }
        ValueType t = peek(what);
        try {
            switch (t) {
                case NIL -> {
                    in.unpackNil();
                    return null;
                }
                case BOOLEAN -> {
                    return in.unpackBoolean();
                }
                case INTEGER -> {
                    return i64(what);
                }
                case FLOAT -> {
                    return in.unpackDouble();
                }
                case STRING -> {
                    return str(what);
                }
                case BINARY -> {
                    int n = in.unpackBinaryHeader();
                    if (n < 0 || n > remaining()) {
                        throw new MalformedMessageException(what + ": binary declares " + Integer.toUnsignedString(n)
                                + " bytes but the frame has " + remaining() + " bytes left");
                    }
                    return in.readPayload(n);
                }
                case ARRAY -> {
                    int n = arrayHeader(what);
                    List<Object> list = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        list.add(any(what, depth + 1));
                    }
                    return list;
                }
                case MAP -> {
                    int n = mapHeader(what);
                    Map<String, Object> map = new LinkedHashMap<>();
                    for (int i = 0; i < n; i++) {
                        String k = str(what + " key");
                        if (map.containsKey(k)) {
                            throw new MalformedMessageException(what + ": duplicate key \"" + k + "\"");
                        }
                        map.put(k, any(what, depth + 1));
                    }
                    return map;
                }
                default -> throw mistyped(what + " must be a plain value", t);
            }
        } catch (IOException | MessagePackException e) {
            throw malformed(what, e);
        }
    }

    @Override
    public void close() {
        try {
            in.close();
        } catch (IOException e) {
            // an in-memory buffer: nothing to release
        }
    }
}
