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
 * LMCache's {@code lm://} wire format, as LMCache's current {@code lmcache/v1/protocol.py} frames it
 * (matched against LMCache commit {@value #LMCACHE_COMMIT}; spec §4.9), with two lmcache4j
 * additions that LMCache clients never send (the AUTH_HELLO handshake with its payload tags, REMOVE).
 *
 * <p><b>ClientMetaMessage</b>, {@value #CLIENT_HEADER_BYTES} bytes: Python {@code struct} format
 * {@code "iiiiiiiii150s"} in native mode (little-endian, no padding on x86-64/aarch64):
 * {@code command, length, fmt, dtype, location, shape0..3, key[150]}. The key is the UTF-8 key
 * string right-padded with spaces. {@code location} is 0 (none), 1 ({@code LocalCPUBackend}) or 2
 * ({@code LocalDiskBackend}).
 *
 * <p><b>ServerMetaMessage</b>, {@value #SERVER_HEADER_BYTES} bytes: {@code "iiiiiiiii"}:
 * {@code code, length, fmt, dtype, shape0..3, location}: location comes <em>last</em> here, so
 * bytes 4..32 are exactly a {@link RemoteMetadata}.
 *
 * <p>Older LMCache releases used 8-int frames (182 and 32 bytes, no location). They cannot be told
 * apart from the current ones on the wire without guessing (a 182-byte header followed by a
 * payload reads as a valid 186-byte header), so lmcache4j speaks the current form only.
 *
 * <p>Flows: PUT = header (length = payload bytes) + payload, no reply. GET = header (length 0)
 * → reply header, and when SUCCESS {@code length} payload bytes. EXIST → reply header, code
 * 200 present / 400 absent. HEALTH → SUCCESS. LIST: LMCache's server has no LIST case and sends
 * nothing back, which leaves a client waiting forever; lmcache4j's server answers FAIL instead.
 * lmcache4j: when the server has a token, a connection starts with the challenge-response of
 * {@link LmSession}: AUTH_HELLO ({@value #AUTH_HELLO}, the client's 32-byte nonce and the code of the
 * tag it prefers as payload) → SUCCESS with length 65 and the server's nonce, proof and choice of tag
 * as payload (a hello of the nonce alone, from lmcache4j before the choice, gets length 64 and no
 * choice); then AUTH_PROOF
 * ({@value #AUTH_PROOF}, the client's 32-byte proof) → SUCCESS, or FAIL and the server closes. Any
 * other first command closes the connection. On such a connection every PUT payload and every GET
 * reply payload is followed by a {@value LmSession#TAG_BYTES}-byte {@link PayloadTag}. REMOVE
 * ({@value #REMOVE}) → 200 removed / 400 absent.
 *
 * <p>LMCache's server parses every key field with {@code CacheEngineKey.from_string}, which needs
 * at least five {@code @}-separated parts; commands that carry no real key (HEALTH, LIST, the handshake)
 * therefore send {@link #PLACEHOLDER_KEY} so that LMCache's server accepts them too.
 */
public final class LmProtocol {
    /** The LMCache commit whose {@code lmcache/v1/protocol.py} these frames were matched against. */
    public static final String LMCACHE_COMMIT = "c1a02cc81b0751e540b73430f38bec6bc27fd211";

    public static final int PUT = 1;
    public static final int GET = 2;
    public static final int EXIST = 3;
    public static final int LIST = 4;
    public static final int HEALTH = 5;
    /** lmcache4j: removes a key. */
    public static final int REMOVE = 6;
    /**
     * lmcache4j, retired: the token sent in clear. A server answers it by closing the connection and
     * saying that the client predates {@link #AUTH_HELLO}.
     */
    public static final int AUTH_RETIRED = 100;
    /** lmcache4j: the client's nonce, the first message of a connection when the server has a token. */
    public static final int AUTH_HELLO = 101;
    /** lmcache4j: the client's proof, sent once the server's proof checked out. */
    public static final int AUTH_PROOF = 102;

    public static final int SUCCESS = 200;
    public static final int FAIL = 400;

    /** {@code location}: none given (what LMCache's lm:// client sends). */
    public static final int LOCATION_NONE = 0;
    /** {@code location}: LMCache's {@code LocalCPUBackend}. */
    public static final int LOCATION_LOCAL_CPU = 1;
    /** {@code location}: LMCache's {@code LocalDiskBackend}. */
    public static final int LOCATION_LOCAL_DISK = 2;

    /** The key field's size. */
    public static final int KEY_BYTES = 150;
    /** 9 int32 + the key field. */
    public static final int CLIENT_HEADER_BYTES = 36 + KEY_BYTES;
    /** 9 int32. */
    public static final int SERVER_HEADER_BYTES = 36;
    /** The longest token a server or client may hold. */
    public static final int MAX_TOKEN_BYTES = 4096;
    /** A key string LMCache's {@code CacheEngineKey.from_string} parses, for commands without a key. */
    public static final String PLACEHOLDER_KEY = "lmcache4j@1@0@0@half";

    /** The dummy metadata LMCache's client sends with GET/EXIST/...: length 0, fmt 1, fp16, zero shape. */
    private static final int[] DUMMY = {0, 1, 2, 0, 0, 0, 0};

    private LmProtocol() {
    }

    /**
     * A client header. {@code meta} holds the 7 metadata ints in {@link RemoteMetadata}'s order
     * (length, fmt, dtype, shape0..3); {@code location} is the field the wire puts between dtype
     * and shape.
     */
    public record ClientHeader(int command, int[] meta, int location, String key) {
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
            return o instanceof ClientHeader h && h.command == command && Arrays.equals(h.meta, meta)
                    && h.location == location && h.key.equals(key);
        }

        @Override
        public int hashCode() {
            return 31 * (31 * (31 * command + Arrays.hashCode(meta)) + location) + key.hashCode();
        }

        @Override
        public String toString() {
            return "ClientHeader[command=" + command + ", meta=" + Arrays.toString(meta) + ", location=" + location
                    + ", key=" + key + "]";
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

    /** A client header carrying {@code metadata} (PUT), with no location. */
    public static byte[] encodeClient(int command, RemoteMetadata metadata, String key) {
        return encodeClient(command, metadata, LOCATION_NONE, key);
    }

    /** A client header carrying {@code metadata} and a {@code location} code. */
    public static byte[] encodeClient(int command, RemoteMetadata metadata, int location, String key) {
        return encodeClient(command, metadata.toBytes(), location, key);
    }

    /** A client header with LMCache's dummy metadata and the given length (GET, EXIST, HEALTH, the handshake...). */
    public static byte[] encodeClient(int command, int length, String key) {
        ByteBuffer meta = ByteBuffer.allocate(RemoteMetadata.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        meta.putInt(length);
        for (int i = 1; i < DUMMY.length; i++) {
            meta.putInt(DUMMY[i]);
        }
        return encodeClient(command, meta.array(), LOCATION_NONE, key);
    }

    /** {@code metadataBytes} in {@link RemoteMetadata}'s order; the wire puts location after dtype. */
    private static byte[] encodeClient(int command, byte[] metadataBytes, int location, String key) {
        byte[] keyField = keyField(key); // checks the key before anything is built
        ByteBuffer m = ByteBuffer.wrap(metadataBytes).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer b = ByteBuffer.allocate(CLIENT_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(command);
        b.putInt(m.getInt()).putInt(m.getInt()).putInt(m.getInt()); // length, fmt, dtype
        b.putInt(location);
        b.putInt(m.getInt()).putInt(m.getInt()).putInt(m.getInt()).putInt(m.getInt()); // shape0..3
        b.put(keyField);
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

    /**
     * Decodes a client header. The key is the field with trailing spaces removed; it must be valid
     * UTF-8 without control characters (it may be empty: HEALTH, LIST and the handshake carry no key).
     */
    public static ClientHeader decodeClient(byte[] bytes) throws ProtocolException {
        if (bytes.length != CLIENT_HEADER_BYTES) {
            throw new ProtocolException("client header must be " + CLIENT_HEADER_BYTES + " bytes, got " + bytes.length);
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int command = b.getInt();
        int[] meta = new int[7];
        meta[0] = b.getInt(); // length
        meta[1] = b.getInt(); // fmt
        meta[2] = b.getInt(); // dtype
        int location = b.getInt();
        for (int i = 3; i < 7; i++) { // shape0..3
            meta[i] = b.getInt();
        }
        int keyStart = CLIENT_HEADER_BYTES - KEY_BYTES;
        int end = KEY_BYTES;
        while (end > 0 && bytes[keyStart + end - 1] == ' ') {
            end--;
        }
        String key;
        try {
            CharBuffer chars = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes, keyStart, end));
            key = chars.toString();
        } catch (CharacterCodingException e) {
            throw new ProtocolException("key field is not valid UTF-8");
        }
        for (int i = 0; i < key.length(); i++) {
            if (Character.isISOControl(key.charAt(i))) {
                throw new ProtocolException("key contains control character 0x" + Integer.toHexString(key.charAt(i)));
            }
        }
        return new ClientHeader(command, meta, location, key);
    }

    // ---- server → client ----------------------------------------------------------------------

    /** A reply header: {@code code}, the 28 metadata bytes, then {@code location}. */
    public static byte[] encodeServer(int code, byte[] metadataBytes, int location) {
        if (metadataBytes.length != RemoteMetadata.BYTES) {
            throw new IllegalArgumentException("metadata must be " + RemoteMetadata.BYTES + " bytes");
        }
        ByteBuffer b = ByteBuffer.allocate(SERVER_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(code);
        b.put(metadataBytes);
        b.putInt(location);
        return b.array();
    }

    /** A reply header with {@code metadataBytes} and no location (what LMCache's server sends). */
    public static byte[] encodeServer(int code, byte[] metadataBytes) {
        return encodeServer(code, metadataBytes, LOCATION_NONE);
    }

    /** A reply header with only a code (length 0, LMCache's dummy fmt/dtype, no location). */
    public static byte[] encodeServer(int code) {
        return encodeServer(code, 0);
    }

    /** A reply header with a code and a payload length (LMCache's dummy fmt/dtype, no location). */
    public static byte[] encodeServer(int code, int length) {
        ByteBuffer b = ByteBuffer.allocate(SERVER_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(code);
        b.putInt(length);
        for (int i = 1; i < DUMMY.length; i++) {
            b.putInt(DUMMY[i]);
        }
        b.putInt(LOCATION_NONE);
        return b.array();
    }

    /** The payload length field of a reply header. */
    public static int replyLength(byte[] reply) {
        return ByteBuffer.wrap(reply).order(ByteOrder.LITTLE_ENDIAN).getInt(4);
    }

    /** The code of a reply header. */
    public static int replyCode(byte[] reply) {
        return ByteBuffer.wrap(reply).order(ByteOrder.LITTLE_ENDIAN).getInt(0);
    }

    /** The location code of a reply header (its last field). */
    public static int replyLocation(byte[] reply) {
        return ByteBuffer.wrap(reply).order(ByteOrder.LITTLE_ENDIAN).getInt(SERVER_HEADER_BYTES - 4);
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
