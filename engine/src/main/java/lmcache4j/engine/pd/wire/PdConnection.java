package lmcache4j.engine.pd.wire;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.Channels;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.WritableByteChannel;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.remote.lm.PayloadTag;

/**
 * One PD connection: the {@code lm://} handshake ({@link LmSession}: each side proves it holds the
 * deployment's token, which never crosses the wire, and chooses the tag), then frames, each tagged
 * with the session's tag of its direction. A frame is {@code [u32 body length][u8 kind][body][16-byte tag]};
 * the tag covers the five header bytes and the body, and a message number both sides count, so a
 * frame cannot be altered, forged, replayed or moved to another connection.
 *
 * <ul>
 *   <li>{@link #MESSAGE}: a msgpack message ({@link PdMessages});</li>
 *   <li>{@link #CHUNK}: a chunk write, {@code [u64 slot][payload]}: the payload goes straight into the
 *       receiver's memory as it arrives, and is usable only once the tag after it has been checked;</li>
 *   <li>{@link #ACK}: one status byte.</li>
 * </ul>
 *
 * <p><b>Bounded.</b> Every read waits at most the connection's timeout (the socket's read timeout);
 * a write that blocks longer (a peer that stopped reading) has its socket closed by a watchdog; a
 * frame longer than {@code maxBodyBytes} is refused before a byte of it is read.
 *
 * <p><b>Zero-copy chunks.</b> On a socket that has a {@link SocketChannel} (every connection this
 * class opens, and those a {@code ServerSocketChannel} accepts), a chunk is written straight from its
 * off-heap segment (gathering writes: header and slot with the first piece, then the pieces, the
 * tag with the last) and read straight into the receiver's segment; only the tag's pass copies it, 64 KiB at a
 * time, into a heap buffer, because the JDK's tags are far slower over a direct buffer (see
 * {@link PayloadTag}). Messages and acknowledgements go through the socket's streams.
 *
 * <p>{@link #unkeyedForBenchmark} makes a connection without handshake or tags: only
 * {@code ./lmcache4j bench pd} uses it, to measure what the tags cost. No configuration reaches it.
 *
 * <p>Not thread-safe, except that one thread may send while another receives (a sender reads its
 * acknowledgements on a thread of their own): the two directions share no state.
 */
public final class PdConnection implements AutoCloseable {
    /** A msgpack message. */
    public static final byte MESSAGE = 1;
    /** A chunk write. */
    public static final byte CHUNK = 2;
    /** An acknowledgement. */
    public static final byte ACK = 3;
    /** An acknowledgement's status: done. */
    public static final byte OK = 0;
    /** An acknowledgement's status: refused (the slot is unknown, expired or of another size). */
    public static final byte REFUSED = 1;

    private static final int HEADER_BYTES = 5;
    private static final ByteBuffer NO_BYTES = ByteBuffer.allocate(0).asReadOnlyBuffer();
    private static final int SCRATCH_BYTES = 64 * 1024;
    private static final int AHEAD_BYTES = 4 * 1024;
    /**
     * A chunk is tagged and written in pieces of this size: a piece is still in cache when the
     * socket copies it after the tag's pass, and one gathering write per piece keeps system calls
     * few (with 128 KiB pieces, {@code bench pd}'s transfer part moved a quarter to a third less).
     */
    private static final int SEND_PIECE_BYTES = 512 * 1024;
    /** A chunk is tagged on arrival in pieces of at least this size, while the sender writes the rest. */
    private static final int RECEIVE_TAG_PIECE_BYTES = 128 * 1024;
    /** The slowest a frame may arrive on average before its connection is dropped (beyond the timeout). */
    private static final long MIN_BYTES_PER_SECOND = 1L << 20;

    private final Socket socket;
    private final SocketChannel channel; // null for a socket without one: chunks then go through the streams
    private final DataInputStream in;
    private final OutputStream out;
    private final PayloadTag sendTag;
    private final PayloadTag receiveTag;
    private final Duration timeout;
    private final int maxBodyBytes;
    private final byte[] scratch = new byte[SCRATCH_BYTES]; // the receiving side's
    /**
     * With a channel, what one read brought past the bytes asked for: a frame's header, body and tag
     * then come in one system call, and an acknowledgement with the next header often too.
     */
    private final ByteBuffer ahead;
    private final byte[] header = new byte[HEADER_BYTES]; // the receiving side's
    private final byte[] sendHeader = new byte[HEADER_BYTES];
    private PayloadTag.Message chunkTag;
    private long chunkPayloadBytes = -1;
    private Duration idleTimeout;
    private final FrameDeadline sendDeadline = new FrameDeadline(this::close);
    private final FrameDeadline receiveDeadline = new FrameDeadline(this::close);

    private PdConnection(Socket socket, Optional<LmSession> session, boolean server, Duration timeout, int maxBodyBytes)
            throws IOException {
        this.socket = socket;
        this.channel = socket.getChannel();
        this.ahead = channel == null ? null : ByteBuffer.allocateDirect(AHEAD_BYTES).flip();
        this.in = new DataInputStream(socket.getInputStream());
        this.out = new BufferedOutputStream(socket.getOutputStream(), SCRATCH_BYTES);
        this.sendTag = session.map(s -> server ? s.serverToClient() : s.clientToServer()).orElse(null);
        this.receiveTag = session.map(s -> server ? s.clientToServer() : s.serverToClient()).orElse(null);
        this.timeout = timeout;
        this.idleTimeout = timeout;
        this.maxBodyBytes = maxBodyBytes;
    }

    /**
     * How long {@link #receive()} waits for the first byte of a frame (default: the timeout). A
     * server gives its peers longer, since a sender keeps its connection between requests; once a
     * frame has begun, the rest of it must come within the timeout.
     */
    public void setIdleTimeout(Duration idle) {
        this.idleTimeout = Objects.requireNonNull(idle, "idle");
    }

    /**
     * Connects to {@code host:port} and proves {@code token} (the server proves it first: nothing
     * keyed is sent to a server that cannot).
     *
     * @param maxBodyBytes the longest frame body this side accepts
     * @throws LmSession.AuthenticationException when the server cannot prove the token or refuses ours
     * @throws IOException                       when the connection fails or a wait passes {@code timeout}
     */
    public static PdConnection connect(String host, int port, byte[] token, Duration timeout, int maxBodyBytes)
            throws IOException {
        Objects.requireNonNull(token, "token");
        Socket socket = open(host, port, timeout);
        try {
            LmSession session = LmSession.authenticate(channelOf(socket), token);
            return new PdConnection(socket, Optional.of(session), false, timeout, maxBodyBytes);
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /**
     * The server side of a fresh connection: proves this side holds {@code token}, then checks the
     * client's proof.
     *
     * @return the connection, or empty when the client's proof was wrong (answered FAIL; the caller
     *         counts it, may delay, and closes the socket)
     * @throws PdProtocolException when the client does not speak the handshake
     */
    public static Optional<PdConnection> accept(Socket socket, byte[] token, Duration timeout, int maxBodyBytes)
            throws IOException {
        Objects.requireNonNull(token, "token");
        socket.setSoTimeout(Math.toIntExact(Math.max(1, timeout.toMillis())));
        socket.setTcpNoDelay(true);
        ByteChannel ch = channelOf(socket);
        LmProtocol.ClientHeader hello = readClientHeader(ch);
        if (hello.command() != LmProtocol.AUTH_HELLO || !LmSession.Accepting.helloLength(hello.length())) {
            throw new PdProtocolException("command " + hello.command() + " (length " + hello.length()
                    + ") where a PD server expects AUTH_HELLO with a " + LmSession.NONCE_BYTES + "-byte nonce and a"
                    + " payload tag offer");
        }
        LmSession.Accepting handshake;
        try {
            handshake = LmSession.Accepting.hello(LmProtocol.readFully(ch, hello.length()), tagPreference());
        } catch (IllegalArgumentException e) {
            throw new PdProtocolException("a hello out of protocol: " + e.getMessage());
        }
        LmProtocol.writeFully(ch, ByteBuffer.wrap(handshake.answer(token)));
        LmProtocol.ClientHeader proof = readClientHeader(ch);
        if (proof.command() != LmProtocol.AUTH_PROOF || proof.length() != LmSession.PROOF_BYTES) {
            throw new PdProtocolException("command " + proof.command() + " where AUTH_PROOF with a "
                    + LmSession.PROOF_BYTES + "-byte proof was expected");
        }
        boolean ok = handshake.proves(token, LmProtocol.readFully(ch, LmSession.PROOF_BYTES));
        LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeServer(ok ? LmProtocol.SUCCESS : LmProtocol.FAIL)));
        if (!ok) {
            return Optional.empty();
        }
        return Optional.of(new PdConnection(socket, Optional.of(handshake.session(token)), true, timeout, maxBodyBytes));
    }

    /** This process's preferred payload tag; a bad override is the server's error, not the client's. */
    private static PayloadTag.Algorithm tagPreference() throws IOException {
        try {
            return PayloadTag.Algorithm.preferred();
        } catch (IllegalArgumentException e) {
            throw new IOException(e.getMessage(), e);
        }
    }

    /**
     * A connection without handshake or tags, for {@code bench pd}'s measurement of what the tags
     * cost. Both ends must be made this way; never used outside that benchmark.
     */
    public static PdConnection unkeyedForBenchmark(Socket socket, Duration timeout, int maxBodyBytes) throws IOException {
        socket.setSoTimeout(Math.toIntExact(Math.max(1, timeout.toMillis())));
        socket.setTcpNoDelay(true);
        return new PdConnection(socket, Optional.empty(), true, timeout, maxBodyBytes);
    }

    /** As {@link #unkeyedForBenchmark(Socket, Duration, int)}, connecting first. */
    public static PdConnection connectUnkeyedForBenchmark(String host, int port, Duration timeout, int maxBodyBytes)
            throws IOException {
        return new PdConnection(open(host, port, timeout), Optional.empty(), false, timeout, maxBodyBytes);
    }

    private static Socket open(String host, int port, Duration timeout) throws IOException {
        Socket socket = SocketChannel.open().socket(); // blocking; its streams honour the read timeout
        try {
            socket.setTcpNoDelay(true);
            socket.connect(new InetSocketAddress(host, port), Math.toIntExact(Math.max(1, timeout.toMillis())));
            socket.setSoTimeout(Math.toIntExact(Math.max(1, timeout.toMillis())));
            return socket;
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    private static LmProtocol.ClientHeader readClientHeader(ReadableByteChannel ch) throws IOException {
        try {
            return LmProtocol.decodeClient(LmProtocol.readFully(ch, LmProtocol.CLIENT_HEADER_BYTES));
        } catch (LmProtocol.ProtocolException e) {
            throw new PdProtocolException("not a PD handshake: " + e.getMessage());
        }
    }

    /** The socket's streams as the one channel {@link LmSession} speaks over (reads honour the socket's timeout). */
    private static ByteChannel channelOf(Socket socket) throws IOException {
        ReadableByteChannel r = Channels.newChannel(socket.getInputStream());
        WritableByteChannel w = Channels.newChannel(socket.getOutputStream());
        return new ByteChannel() {
            @Override
            public int read(ByteBuffer dst) throws IOException {
                return r.read(dst);
            }

            @Override
            public int write(ByteBuffer src) throws IOException {
                return w.write(src);
            }

            @Override
            public boolean isOpen() {
                return !socket.isClosed();
            }

            @Override
            public void close() throws IOException {
                socket.close();
            }
        };
    }

    /** The algorithm of this connection's tags, which its handshake chose; empty for {@link #unkeyedForBenchmark}. */
    public Optional<PayloadTag.Algorithm> tagAlgorithm() {
        return Optional.ofNullable(sendTag).map(PayloadTag::algorithm);
    }

    /** Whether frames carry tags (false only for {@link #unkeyedForBenchmark}). */
    public boolean keyed() {
        return sendTag != null;
    }

    /** The peer's address, for messages. */
    public String peer() {
        return String.valueOf(socket.getRemoteSocketAddress());
    }

    // ---- sending ------------------------------------------------------------------------------

    /** Sends one msgpack message. */
    public void sendMessage(byte[] body) throws IOException {
        sendSmall(MESSAGE, body);
    }

    /** Sends an acknowledgement. */
    public void sendAck(byte status) throws IOException {
        sendSmall(ACK, new byte[] {status});
    }

    private void sendSmall(byte kind, byte[] body) throws IOException {
        fillHeader(body.length, kind);
        PayloadTag.Message tag = sendTag == null ? null : sendTag.next().update(sendHeader).update(body);
        sendDeadline.arm(frameAllowanceNanos(body.length));
        try {
            out.write(sendHeader);
            out.write(body);
            if (tag != null) {
                out.write(tag.finish());
            }
            out.flush();
        } finally {
            sendDeadline.disarm();
        }
    }

    /**
     * Sends {@code payload} as the chunk write of {@code slot}, straight from the segment: header,
     * slot and the first piece of the payload in one gathering write, then the rest piece by piece,
     * each tagged just before it is written (so the receiver reads one piece while this side tags
     * the next); the tag goes out with the last piece.
     */
    public void sendChunk(long slot, MemorySegment payload) throws IOException {
        long bodyBytes = Long.BYTES + payload.byteSize();
        if (bodyBytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a chunk of " + payload.byteSize() + " bytes does not fit one frame");
        }
        fillHeader((int) bodyBytes, CHUNK);
        ByteBuffer head = ByteBuffer.allocate(HEADER_BYTES + Long.BYTES).put(sendHeader).putLong(slot).flip();
        PayloadTag.Message tag = sendTag == null ? null : sendTag.next().update(head.duplicate());
        sendDeadline.arm(frameAllowanceNanos(bodyBytes));
        try {
            if (channel == null) {
                writeThroughStream(head, payload, tag);
                return;
            }
            long size = payload.byteSize();
            for (long at = 0; at < size || head.hasRemaining(); ) {
                long n = Math.min(SEND_PIECE_BYTES, size - at);
                ByteBuffer piece = payload.asSlice(at, n).asByteBuffer();
                if (tag != null) {
                    tag.update(piece.duplicate());
                }
                at += n;
                ByteBuffer end = at < size || tag == null ? NO_BYTES : ByteBuffer.wrap(tag.finish());
                ByteBuffer[] frame = {head, piece, end};
                while (head.hasRemaining() || piece.hasRemaining() || end.hasRemaining()) {
                    channel.write(frame);
                }
            }
        } finally {
            sendDeadline.disarm();
        }
    }

    /** A socket without a channel (one a plain {@code ServerSocket} accepted): the frame through the stream. */
    private void writeThroughStream(ByteBuffer head, MemorySegment payload, PayloadTag.Message tag) throws IOException {
        byte[] piece = new byte[SCRATCH_BYTES];
        out.write(head.array(), 0, head.limit());
        for (long at = 0, size = payload.byteSize(); at < size; ) {
            int n = (int) Math.min(piece.length, size - at);
            MemorySegment.copy(payload, ValueLayout.JAVA_BYTE, at, piece, 0, n);
            if (tag != null) {
                tag.update(ByteBuffer.wrap(piece, 0, n));
            }
            out.write(piece, 0, n);
            at += n;
        }
        if (tag != null) {
            out.write(tag.finish());
        }
        out.flush();
    }

    private void fillHeader(int bodyBytes, byte kind) {
        ByteBuffer.wrap(sendHeader).putInt(bodyBytes).put(kind);
    }

    // ---- receiving ----------------------------------------------------------------------------

    /** What {@link #receive()} read. */
    public sealed interface Frame permits Message, Ack, ChunkHeader {
    }

    /** A msgpack message, its tag checked. */
    public record Message(byte[] body) implements Frame {
    }

    /** An acknowledgement, its tag checked. */
    public record Ack(byte status) implements Frame {
    }

    /**
     * The start of a chunk write: its slot and payload size. The payload follows; call
     * {@link #readChunkPayload} or {@link #skipChunkPayload} before the next {@link #receive()}.
     */
    public record ChunkHeader(long slot, long payloadBytes) implements Frame {
    }

    /** Reads the next frame (for a chunk, only its header). */
    public Frame receive() throws IOException {
        if (chunkPayloadBytes >= 0) {
            throw new IllegalStateException("the payload of the last chunk frame was not read");
        }
        if (channel == null) {
            socket.setSoTimeout(Math.toIntExact(Math.max(1, idleTimeout.toMillis())));
            int first;
            try {
                first = in.read(header, 0, HEADER_BYTES);
            } finally {
                socket.setSoTimeout(Math.toIntExact(Math.max(1, timeout.toMillis())));
            }
            if (first < 0) {
                throw new EOFException("connection closed");
            }
            readFully(header, first, HEADER_BYTES - first, false);
            return frame();
        }
        // Through the channel, bounded by the receiving deadline instead of the socket's read timeout: a timed read
        // of a socket toggles its blocking mode twice, or parks a virtual thread on a timer, at every frame.
        receiveDeadline.arm(idleTimeout.toNanos() + frameAllowanceNanos(0));
        long bodyBytes = -1;
        try {
            readFully(header, HEADER_BYTES, true);
            bodyBytes = ByteBuffer.wrap(header).getInt() & 0xffffffffL;
            receiveDeadline.arm(frameAllowanceNanos(bodyBytes)); // once begun, a frame gets its allowance, not the idle time
            return frame();
        } catch (ClosedChannelException e) {
            throw timedOutOr(e, bodyBytes < 0 ? "no frame within the idle timeout of " + idleTimeout.toMillis() + " ms"
                    : "a frame of " + bodyBytes + " bytes arrived slower than " + MIN_BYTES_PER_SECOND + " bytes/s");
        } finally {
            receiveDeadline.disarm();
        }
    }

    /** The frame whose header is in {@link #header}: its body and tag read (for a chunk, its slot only). */
    private Frame frame() throws IOException {
        ByteBuffer h = ByteBuffer.wrap(header);
        int bodyBytes = h.getInt();
        byte kind = h.get();
        if (bodyBytes < 0 || bodyBytes > maxBodyBytes) {
            throw new PdProtocolException("a frame of " + Integer.toUnsignedString(bodyBytes) + " bytes, more than the "
                    + maxBodyBytes + " this connection takes");
        }
        switch (kind) {
            case MESSAGE, ACK -> {
                int tagBytes = receiveTag == null ? 0 : PayloadTag.BYTES;
                byte[] bodyAndTag = new byte[bodyBytes + tagBytes]; // one read for both
                readFully(bodyAndTag, bodyAndTag.length, false);
                byte[] body = Arrays.copyOf(bodyAndTag, bodyBytes);
                if (receiveTag != null) {
                    checkTag(receiveTag.next().update(header).update(body),
                            Arrays.copyOfRange(bodyAndTag, bodyBytes, bodyAndTag.length));
                }
                if (kind == ACK) {
                    if (bodyBytes != 1) {
                        throw new PdProtocolException("an acknowledgement of " + bodyBytes + " bytes");
                    }
                    return new Ack(body[0]);
                }
                return new Message(body);
            }
            case CHUNK -> {
                if (bodyBytes < Long.BYTES) {
                    throw new PdProtocolException("a chunk frame of " + bodyBytes + " bytes has no slot");
                }
                byte[] slotBytes = new byte[Long.BYTES];
                readFully(slotBytes, Long.BYTES, false);
                chunkTag = receiveTag == null ? null : receiveTag.next().update(header).update(slotBytes);
                chunkPayloadBytes = bodyBytes - Long.BYTES;
                return new ChunkHeader(ByteBuffer.wrap(slotBytes).getLong(), chunkPayloadBytes);
            }
            default -> throw new PdProtocolException("unknown frame kind " + kind);
        }
    }

    /**
     * Reads the pending chunk's payload into {@code dst} (exactly its size), then its tag.
     *
     * @throws PdTagMismatchException when the tag is wrong: {@code dst}'s bytes must not be used
     */
    public void readChunkPayload(MemorySegment dst) throws IOException {
        long size = chunkPayloadBytes;
        if (size < 0) {
            throw new IllegalStateException("no chunk frame is being read");
        }
        if (dst.byteSize() != size) {
            throw new IllegalArgumentException("the chunk's payload is " + size + " bytes, its destination "
                    + dst.byteSize());
        }
        if (channel == null) {
            readInPieces(size, dst);
            finishChunk();
            return;
        }
        ByteBuffer into = dst.asByteBuffer();
        receiveDeadline.arm(frameAllowanceNanos(size));
        try {
            int early = Math.min(ahead.remaining(), into.remaining()); // read with the header
            into.put(into.position(), ahead, ahead.position(), early).position(early);
            ahead.position(ahead.position() + early);
            int tagged = 0; // the tag follows the bytes as they land, while the sender writes the next ones
            while (true) {
                boolean landed = !into.hasRemaining();
                if (chunkTag != null && (into.position() - tagged >= RECEIVE_TAG_PIECE_BYTES
                        || landed && tagged < into.position())) {
                    chunkTag.update(into.duplicate().limit(into.position()).position(tagged));
                    tagged = into.position();
                }
                if (landed) {
                    break;
                }
                if (channel.read(into) < 0) {
                    throw new EOFException("connection closed mid-frame with " + into.remaining()
                            + " bytes still expected");
                }
            }
            finishChunk();
        } catch (ClosedChannelException e) {
            throw timedOutOr(e, "a chunk of " + size + " bytes arrived slower than " + MIN_BYTES_PER_SECOND + " bytes/s");
        } finally {
            receiveDeadline.disarm();
        }
    }

    /** {@code e}, or a timeout saying {@code what} when the receiving deadline closed the connection. */
    private IOException timedOutOr(ClosedChannelException e, String what) {
        return receiveDeadline.expired() ? new SocketTimeoutException(what) : e;
    }

    /** Reads the pending payload through {@link #scratch}, tagging it, into {@code dst} (or nowhere, when null). */
    private void readInPieces(long size, MemorySegment dst) throws IOException {
        long deadline = System.nanoTime() + frameAllowanceNanos(size);
        long at = 0;
        while (at < size) {
            int n = (int) Math.min(scratch.length, size - at);
            readFully(scratch, n, false);
            if (chunkTag != null) {
                chunkTag.update(ByteBuffer.wrap(scratch, 0, n));
            }
            if (dst != null) {
                MemorySegment.copy(scratch, 0, dst, ValueLayout.JAVA_BYTE, at, n);
            }
            at += n;
            if (System.nanoTime() - deadline > 0) {
                throw new SocketTimeoutException("a chunk of " + size + " bytes arrived slower than "
                        + MIN_BYTES_PER_SECOND + " bytes/s");
            }
        }
    }

    /** Reads and drops the pending chunk's payload and tag (a write to a slot that is not there). */
    public void skipChunkPayload() throws IOException {
        long size = chunkPayloadBytes;
        if (size < 0) {
            throw new IllegalStateException("no chunk frame is being read");
        }
        if (channel != null) {
            receiveDeadline.arm(frameAllowanceNanos(size));
        }
        try {
            readInPieces(size, null);
            finishChunk();
        } catch (ClosedChannelException e) {
            throw timedOutOr(e, "a chunk of " + size + " bytes arrived slower than " + MIN_BYTES_PER_SECOND + " bytes/s");
        } finally {
            if (channel != null) {
                receiveDeadline.disarm();
            }
        }
    }

    private void finishChunk() throws IOException {
        PayloadTag.Message tag = chunkTag;
        chunkTag = null;
        chunkPayloadBytes = -1;
        if (tag != null) {
            checkTag(tag);
        }
    }

    private long frameAllowanceNanos(long bytes) {
        return timeout.toNanos() + bytes * 1_000_000_000L / MIN_BYTES_PER_SECOND;
    }

    private void checkTag(PayloadTag.Message expected) throws IOException {
        byte[] tag = new byte[PayloadTag.BYTES];
        readFully(tag, tag.length, false);
        checkTag(expected, tag);
    }

    private void checkTag(PayloadTag.Message expected, byte[] tag) throws PdTagMismatchException {
        if (!expected.verify(tag)) {
            throw new PdTagMismatchException("a frame from " + peer() + " failed its tag check: altered in flight, or "
                    + "not sent by the session's peer");
        }
    }

    private void readFully(byte[] dst, int n, boolean frameStart) throws IOException {
        readFully(dst, 0, n, frameStart);
    }

    /** Reads {@code n} bytes into {@code dst} from {@code offset}; a close before a frame's first byte is a plain EOF. */
    private void readFully(byte[] dst, int offset, int n, boolean frameStart) throws IOException {
        int at = 0;
        while (at < n) {
            int r = channel == null ? in.read(dst, offset + at, n - at) : readAhead(dst, offset + at, n - at);
            if (r < 0) {
                if (frameStart && at == 0) {
                    throw new EOFException("connection closed");
                }
                throw new EOFException("connection closed mid-frame with " + (n - at) + " bytes still expected");
            }
            at += r;
        }
    }

    /** Up to {@code n} bytes from what was read ahead, reading the channel (one read, as much as it has) when that is empty. */
    private int readAhead(byte[] dst, int offset, int n) throws IOException {
        if (!ahead.hasRemaining()) {
            ahead.clear();
            int r;
            try {
                r = channel.read(ahead);
            } finally {
                ahead.flip();
            }
            if (r < 0) {
                return -1;
            }
        }
        int k = Math.min(n, ahead.remaining());
        ahead.get(dst, offset, k);
        return k;
    }

    // ---- lifetime -----------------------------------------------------------------------------

    /** Closes the socket; a blocked read or write on another thread fails at once. */
    @Override
    public void close() {
        sendDeadline.disarm();
        receiveDeadline.disarm();
        try {
            socket.close();
        } catch (IOException e) {
            // closing is best effort
        }
    }

    /** Whether the socket is closed. */
    public boolean isClosed() {
        return socket.isClosed();
    }

    @Override
    public String toString() {
        return "PdConnection[" + peer() + (keyed() ? "" : ", unkeyed") + "]";
    }
}
