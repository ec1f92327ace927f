package lmcache4j.engine.pd.wire;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * The PD messages in LMCache's encoding: msgspec's msgpack of a tagged struct, a map whose first
 * entry is {@code "type"} (the struct's name) followed by the fields in declaration order
 * ({@code PDMsgBase(msgspec.Struct, tag=True)} in {@code pd_backend.py}). Decoding is strict and
 * bounded, as a receiver or proxy reads what any peer sends: every length is checked before it is
 * used, a missing field or a value of the wrong type is a {@link PdProtocolException} naming it, and
 * unknown fields are skipped (as msgspec does).
 */
public final class PdMessages {
    /** The most chunk keys one allocation request may list (64 full chunks hold 16,384 tokens). */
    public static final int MAX_KEYS = 4_096;
    /** The longest string any field may hold (a key string is about 110 bytes). */
    public static final int MAX_STRING_BYTES = 1_024;
    /** The highest rank a shape may have. */
    public static final int MAX_RANK = 8;

    static {
        // msgpack-core's ByteBuffer-backed buffers, not sun.misc.Unsafe (as the controller's codec does).
        System.getProperties().putIfAbsent("msgpack.universal-buffer", "true");
    }

    private PdMessages() {
    }

    /** {@code {"type": "AllocRequest", "keys", "fmt", "shape", "dtype", "last_chunk_toks"}}. */
    public static byte[] encode(AllocRequest r) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(6);
            p.packString("type").packString("AllocRequest");
            p.packString("keys").packArrayHeader(r.keys().size());
            for (String k : r.keys()) {
                p.packString(k);
            }
            p.packString("fmt").packInt(r.fmt());
            p.packString("shape").packArrayHeader(r.shape().size());
            for (int d : r.shape()) {
                p.packInt(d);
            }
            p.packString("dtype").packString(r.dtype());
            p.packString("last_chunk_toks").packInt(r.lastChunkToks());
            return p.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("msgpack into memory failed", e);
        }
    }

    /** {@code {"type": "AllocResponse", "already_sent_indexes", "remote_indexes", "error"}} ({@code error}: lmcache4j's). */
    public static byte[] encode(AllocResponse r) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(4);
            p.packString("type").packString("AllocResponse");
            p.packString("already_sent_indexes").packArrayHeader(r.alreadySentIndexes().size());
            for (int i : r.alreadySentIndexes()) {
                p.packInt(i);
            }
            p.packString("remote_indexes").packArrayHeader(r.remoteIndexes().size());
            for (long i : r.remoteIndexes()) {
                p.packLong(i);
            }
            p.packString("error").packString(r.error());
            return p.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("msgpack into memory failed", e);
        }
    }

    /** {@code {"type": "ProxyNotif", "req_id"}}. */
    public static byte[] encode(ProxyNotif n) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(2);
            p.packString("type").packString("ProxyNotif");
            p.packString("req_id").packString(n.reqId());
            return p.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("msgpack into memory failed", e);
        }
    }

    /** Decodes an {@link AllocRequest}; any other message, or a malformed one, is a {@link PdProtocolException}. */
    public static AllocRequest decodeAllocRequest(byte[] frame) throws PdProtocolException {
        try (Reader r = new Reader(frame, "AllocRequest")) {
            List<String> keys = null;
            Integer fmt = null;
            List<Integer> shape = null;
            String dtype = null;
            Integer last = null;
            for (int i = 0; i < r.fields; i++) {
                switch (r.fieldName()) {
                    case "keys" -> keys = r.strings("keys", MAX_KEYS);
                    case "fmt" -> fmt = r.integer("fmt");
                    case "shape" -> shape = r.integers("shape", MAX_RANK);
                    case "dtype" -> dtype = r.string("dtype");
                    case "last_chunk_toks" -> last = r.integer("last_chunk_toks");
                    default -> r.skip();
                }
            }
            r.end();
            return new AllocRequest(r.required(keys, "keys"), r.required(fmt, "fmt"), r.required(shape, "shape"),
                    r.required(dtype, "dtype"), r.required(last, "last_chunk_toks"));
        }
    }

    /** Decodes an {@link AllocResponse} ({@code error} may be absent: LMCache's has none). */
    public static AllocResponse decodeAllocResponse(byte[] frame) throws PdProtocolException {
        try (Reader r = new Reader(frame, "AllocResponse")) {
            List<Integer> already = null;
            List<Long> remote = null;
            String error = "";
            for (int i = 0; i < r.fields; i++) {
                switch (r.fieldName()) {
                    case "already_sent_indexes" -> already = r.integers("already_sent_indexes", MAX_KEYS);
                    case "remote_indexes" -> remote = r.longs("remote_indexes", MAX_KEYS);
                    case "error" -> error = r.string("error");
                    default -> r.skip();
                }
            }
            r.end();
            return new AllocResponse(r.required(already, "already_sent_indexes"), r.required(remote, "remote_indexes"), error);
        }
    }

    /** Decodes a {@link ProxyNotif}. */
    public static ProxyNotif decodeProxyNotif(byte[] frame) throws PdProtocolException {
        try (Reader r = new Reader(frame, "ProxyNotif")) {
            String reqId = null;
            for (int i = 0; i < r.fields; i++) {
                if (r.fieldName().equals("req_id")) {
                    reqId = r.string("req_id");
                } else {
                    r.skip();
                }
            }
            r.end();
            return new ProxyNotif(r.required(reqId, "req_id"));
        }
    }

    /** A strict reader of one tagged-struct map. */
    private static final class Reader implements AutoCloseable {
        private final MessageUnpacker in;
        private final String expectedType;
        private final Set<String> seen = new HashSet<>();
        final int fields;

        Reader(byte[] frame, String expectedType) throws PdProtocolException {
            this.in = MessagePack.newDefaultUnpacker(frame);
            this.expectedType = expectedType;
            try {
                if (!in.hasNext() || in.getNextFormat().getValueType() != ValueType.MAP) {
                    throw new PdProtocolException("a " + expectedType + " is a msgpack map; the frame holds something else");
                }
                int n = in.unpackMapHeader();
                if (n < 1 || n > 64) {
                    throw new PdProtocolException("a " + expectedType + " map of " + n + " entries");
                }
                String first = fieldName();
                String type = first.equals("type") ? string("type") : null;
                if (type == null || !type.equals(expectedType)) {
                    throw new PdProtocolException("expected a message of type " + expectedType + ", got "
                            + (type == null ? "a map without \"type\" first" : "type " + type));
                }
                this.fields = n - 1;
            } catch (IOException | MessagePackException e) {
                throw malformed(expectedType, e);
            }
        }

        String fieldName() throws PdProtocolException {
            String name = string("a field name");
            if (!seen.add(name)) {
                throw new PdProtocolException(expectedType + " has the field " + name + " twice");
            }
            return name;
        }

        String string(String what) throws PdProtocolException {
            try {
                if (in.getNextFormat().getValueType() != ValueType.STRING) {
                    throw new PdProtocolException(expectedType + "." + what + " must be a string");
                }
                int len = in.unpackRawStringHeader();
                if (len > MAX_STRING_BYTES) {
                    throw new PdProtocolException(expectedType + "." + what + " is " + len + " bytes, more than "
                            + MAX_STRING_BYTES);
                }
                return new String(in.readPayload(len), java.nio.charset.StandardCharsets.UTF_8);
            } catch (IOException | MessagePackException e) {
                throw malformed(what, e);
            }
        }

        int integer(String what) throws PdProtocolException {
            long v = longValue(what);
            if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
                throw new PdProtocolException(expectedType + "." + what + " = " + v + " is outside a 32-bit integer");
            }
            return (int) v;
        }

        long longValue(String what) throws PdProtocolException {
            try {
                if (in.getNextFormat().getValueType() != ValueType.INTEGER) {
                    throw new PdProtocolException(expectedType + "." + what + " must be an integer");
                }
                return in.unpackLong();
            } catch (IOException | MessagePackException e) {
                throw malformed(what, e);
            }
        }

        private int arrayHeader(String what, int max) throws PdProtocolException {
            try {
                if (in.getNextFormat().getValueType() != ValueType.ARRAY) {
                    throw new PdProtocolException(expectedType + "." + what + " must be an array");
                }
                int n = in.unpackArrayHeader();
                if (n > max) {
                    throw new PdProtocolException(expectedType + "." + what + " has " + n + " entries, more than " + max);
                }
                return n;
            } catch (IOException | MessagePackException e) {
                throw malformed(what, e);
            }
        }

        List<String> strings(String what, int max) throws PdProtocolException {
            int n = arrayHeader(what, max);
            List<String> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(string(what + "[" + i + "]"));
            }
            return out;
        }

        List<Integer> integers(String what, int max) throws PdProtocolException {
            int n = arrayHeader(what, max);
            List<Integer> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(integer(what + "[" + i + "]"));
            }
            return out;
        }

        List<Long> longs(String what, int max) throws PdProtocolException {
            int n = arrayHeader(what, max);
            List<Long> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(longValue(what + "[" + i + "]"));
            }
            return out;
        }

        void skip() throws PdProtocolException {
            try {
                in.skipValue();
            } catch (IOException | MessagePackException e) {
                throw malformed("an unknown field", e);
            }
        }

        void end() throws PdProtocolException {
            try {
                if (in.hasNext()) {
                    throw new PdProtocolException(expectedType + " is followed by more bytes in its frame");
                }
            } catch (IOException | MessagePackException e) {
                throw malformed("the end", e);
            }
        }

        <T> T required(T value, String field) throws PdProtocolException {
            if (value == null) {
                throw new PdProtocolException(expectedType + " lacks its field " + field);
            }
            return value;
        }

        private PdProtocolException malformed(String what, Exception e) {
            return new PdProtocolException("malformed " + expectedType + " (at " + what + "): " + e.getMessage());
        }

        @Override
        public void close() {
            try {
                in.close();
            } catch (IOException e) {
                // an in-memory unpacker has nothing to close
            }
        }
    }
}
