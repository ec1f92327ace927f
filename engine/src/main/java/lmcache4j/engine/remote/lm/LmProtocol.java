package lmcache4j.engine.remote.lm;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import lmcache4j.engine.remote.RemoteMetadata;

/**
 * LMCache's {@code lm://} wire format ({@code lmcache/v1/protocol.py}, spec §4.9), with two
 * lmcache4j additions that LMCache clients never send (AUTH, REMOVE).
 *
 * <p><b>ClientMetaMessage</b>, {@value #CLIENT_HEADER_BYTES} bytes: Python {@code struct} format
 * {@code "iiiiiiii150s"} in native mode (little-endian, no padding on x86-64/aarch64):
 * {@code command, length, fmt, dtype, shape0..3, key[150]}. The key is the UTF-8 key string
 * right-padded with spaces. Bytes 4..32 are exactly a {@link RemoteMetadata} header.
 *
 * <p><b>ServerMetaMessage</b>, {@value #SERVER_HEADER_BYTES} bytes: {@code "iiiiiiii"}:
 * {@code code, length, fmt, dtype, shape0..3}; bytes 4..32 are again a {@link RemoteMetadata}.
 *
 * <p>LMCache's newer 9-int forms add a {@code location} field, but its {@code ServerMetaMessage}
 * encoder writes {@code location} last while the decoder reads it fifth (and passes the fields to
 * the constructor in another order), so the two sides of LMCache itself disagree. lmcache4j uses
 * the 8-int form on both sides, which LMCache's older (and common) client and server speak.
 *
 * <p>Flows: PUT = header (length = payload bytes) + payload, no reply. GET = header (length 0)
 * → reply header, and when SUCCESS {@code length} payload bytes. EXIST → reply header, code
 * 200 present / 400 absent. LIST → FAIL (not implemented, as in LMCache). HEALTH → SUCCESS.
 * lmcache4j: AUTH ({@value #AUTH}) with length = token bytes and the token as payload → SUCCESS
 * or FAIL (then the server closes); when the server has a token, any other first command closes
 * the connection. REMOVE ({@value #REMOVE}) → 200 removed / 400 absent.
 */
public final class LmProtocol {
    public static final int PUT = 1;
    public static final int GET = 2;
    public static final int EXIST = 3;
    public static final int LIST = 4;
    public static final int HEALTH = 5;
    /** lmcache4j: removes a key. */
    public static final int REMOVE = 6;
    /** lmcache4j: the shared-secret handshake, first message of a connection when the server has a token. */
    public static final int AUTH = 100;

    public static final int SUCCESS = 200;
    public static final int FAIL = 400;

    /** The key field's size. */
    public static final int KEY_BYTES = 150;
    /** 8 int32 + the key field. */
    public static final int CLIENT_HEADER_BYTES = 32 + KEY_BYTES;
    /** 8 int32. */
    public static final int SERVER_HEADER_BYTES = 32;
    /** The most token bytes an AUTH may carry. */
    public static final int MAX_TOKEN_BYTES = 4096;

    /** The dummy metadata LMCache's client sends with GET/EXIST/...: length 0, fmt 1, fp16, zero shape. */
    private static final int[] DUMMY = {0, 1, 2, 0, 0, 0, 0};

    private LmProtocol() {
    }

    /** A client header. {@code meta} holds the 7 metadata ints (length, fmt, dtype, shape0..3). */
    public record ClientHeader(int command, int[] meta, String key) {
        public ClientHeader {
            if (meta.length != 7) {
                throw new IllegalArgumentException("7 metadata ints needed, got " + meta.length);
            }
            meta = meta.clone();
        }

        /** The payload length field. */
        public int length() {
            return meta[0];
        }

        /** The 28 metadata bytes (length, fmt, dtype, shape), as {@link RemoteMetadata} lays them out. */
        public byte[] metadataBytes() {
            ByteBuffer b = ByteBuffer.allocate(RemoteMetadata.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            for (int v : meta) {
                b.putInt(v);
            }
            return b.array();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof ClientHeader h && h.command == command && Arrays.equals(h.meta, meta) && h.key.equals(key);
        }

        @Override
        public int hashCode() {
            return 31 * (31 * command + Arrays.hashCode(meta)) + key.hashCode();
        }

        @Override
        public String toString() {
            return "ClientHeader[command=" + command + ", meta=" + Arrays.toString(meta) + ", key=" + key + "]";
        }
    }

    /** A malformed message: the server closes the connection that sent it. */
    public static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        public ProtocolException(String message) {
            super(message);
        }
    }

    // ---- client → server ----------------------------------------------------------------------

    /** A client header carrying {@code metadata} (PUT). */
    public static byte[] encodeClient(int command, RemoteMetadata metadata, String key) {
        ByteBuffer b = ByteBuffer.allocate(CLIENT_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(command);
        metadata.encode(b);
        putKey(b, key);
        return b.array();
    }

    /** A client header with LMCache's dummy metadata and the given length (GET, EXIST, HEALTH, AUTH...). */
    public static byte[] encodeClient(int command, int length, String key) {
        ByteBuffer b = ByteBuffer.allocate(CLIENT_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(command);
        b.putInt(length);
        for (int i = 1; i < DUMMY.length; i++) {
            b.putInt(DUMMY[i]);
        }
        putKey(b, key);
        return b.array();
    }

    /** The key field: UTF-8, right-padded with spaces to 150 bytes. */
    public static byte[] keyField(String key) {
        byte[] utf8 = key.getBytes(StandardCharsets.UTF_8);
        if (utf8.length > KEY_BYTES) {
            throw new IllegalArgumentException("lm:// keys are at most " + KEY_BYTES + " UTF-8 bytes, this one is "
                    + utf8.length + ": " + key);
        }
        byte[] field = new byte[KEY_BYTES];
        Arrays.fill(field, (byte) ' ');
        System.arraycopy(utf8, 0, field, 0, utf8.length);
        return field;
    }

    private static void putKey(ByteBuffer b, String key) {
        b.put(keyField(key));
    }

    /**
     * Decodes a client header. The key is the field with trailing spaces removed; it must be valid
     * UTF-8 without control characters (it may be empty: HEALTH, LIST and AUTH carry no key).
     */
    public static ClientHeader decodeClient(byte[] bytes) throws ProtocolException {
        if (bytes.length != CLIENT_HEADER_BYTES) {
            throw new ProtocolException("client header must be " + CLIENT_HEADER_BYTES + " bytes, got " + bytes.length);
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int command = b.getInt();
        int[] meta = new int[7];
        for (int i = 0; i < 7; i++) {
            meta[i] = b.getInt();
        }
        int end = KEY_BYTES;
        while (end > 0 && bytes[32 + end - 1] == ' ') {
            end--;
        }
        String key;
        try {
            CharBuffer chars = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes, 32, end));
            key = chars.toString();
        } catch (CharacterCodingException e) {
            throw new ProtocolException("key field is not valid UTF-8");
        }
        for (int i = 0; i < key.length(); i++) {
            if (Character.isISOControl(key.charAt(i))) {
                throw new ProtocolException("key contains control character 0x" + Integer.toHexString(key.charAt(i)));
            }
        }
        return new ClientHeader(command, meta, key);
    }

    // ---- server → client ----------------------------------------------------------------------

    /** A reply header: {@code code} followed by the 28 metadata bytes (zeros/dummy when none). */
    public static byte[] encodeServer(int code, byte[] metadataBytes) {
        if (metadataBytes.length != RemoteMetadata.BYTES) {
            throw new IllegalArgumentException("metadata must be " + RemoteMetadata.BYTES + " bytes");
        }
        ByteBuffer b = ByteBuffer.allocate(SERVER_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(code);
        b.put(metadataBytes);
        return b.array();
    }

    /** A reply header with only a code (length 0 and LMCache's dummy fmt/dtype). */
    public static byte[] encodeServer(int code) {
        ByteBuffer b = ByteBuffer.allocate(SERVER_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(code);
        for (int v : DUMMY) {
            b.putInt(v);
        }
        return b.array();
    }

    /** The code of a reply header. */
    public static int replyCode(byte[] reply) {
        return ByteBuffer.wrap(reply).order(ByteOrder.LITTLE_ENDIAN).getInt(0);
    }

    /** The metadata of a SUCCESS reply to GET. */
    public static RemoteMetadata replyMetadata(byte[] reply) {
        return RemoteMetadata.decode(ByteBuffer.wrap(reply, 4, RemoteMetadata.BYTES).slice());
    }

    // ---- blocking channel I/O -------------------------------------------------------------------

    /** Reads until {@code dst} is full; a peer that closes first is an {@link EOFException}. */
    public static void readFully(ReadableByteChannel ch, ByteBuffer dst) throws IOException {
        while (dst.hasRemaining()) {
            if (ch.read(dst) < 0) {
                throw new EOFException("connection closed with " + dst.remaining() + " bytes still expected");
            }
        }
    }

    /** Reads exactly {@code n} bytes. */
    public static byte[] readFully(ReadableByteChannel ch, int n) throws IOException {
        byte[] bytes = new byte[n];
        readFully(ch, ByteBuffer.wrap(bytes));
        return bytes;
    }

    /** Reads and drops {@code n} bytes. */
    public static void skipFully(ReadableByteChannel ch, long n) throws IOException {
        ByteBuffer scratch = ByteBuffer.allocate((int) Math.min(n, 64 * 1024));
        while (n > 0) {
            scratch.clear().limit((int) Math.min(n, scratch.capacity()));
            readFully(ch, scratch);
            n -= scratch.limit();
        }
    }

    /** Writes every remaining byte of every buffer. */
    public static void writeFully(WritableByteChannel ch, ByteBuffer... bufs) throws IOException {
        for (ByteBuffer b : bufs) {
            while (b.hasRemaining()) {
                ch.write(b);
            }
        }
    }
}
