package lmcache4j.engine.zmq;

import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.zeromq.ZMQ;

import zmq.Msg;
import zmq.io.Metadata;
import zmq.msg.MsgAllocator;

/**
 * A bound on the memory ZeroMQ sockets hold for messages being received. JeroMQ's decoder
 * allocates a message's declared size as soon as its header arrives ({@code zmq.io.coder.Decoder},
 * through the socket's {@code MsgAllocator}), before a byte of it and before any handshake, and
 * holds it until the body has come: a few kilobytes of headers from many connections could make it
 * hold gigabytes, CURVE or not ({@code DeclaredFrameFloodTest}, {@code PreAuthFloodTest}).
 * Installed as the sockets' allocator, this budget reserves every message's size, whatever it is,
 * and refuses a reservation that would take what it holds past its size: the message is cut to
 * nothing, which ends a CURVE peer's connection at once (its handshake or its next message fails to
 * decrypt) and desynchronises a plain one, whose bytes the socket then reads as frames of the same
 * bounded size.
 *
 * <p>A message of at most {@value #HELD_WHILE_PARTIAL_BYTES} bytes is held while it is partial: its
 * reservation returns when JeroMQ first reads the completed message (the decoder only writes into
 * it), so the many small messages of ordinary traffic cost the budget nothing once received. A
 * larger one stays reserved until its bytes have been collected (the application took it, or its
 * connection was dropped), so that completed large messages queued for the application count too.
 * A partial message whose connection was dropped returns its reservation once collected. Both are
 * found in a reference queue by the next reservation or by {@link #heldBytes()}; no thread of its
 * own.
 *
 * <p>A budget may also tell a {@link ConnectionGuard} which connection delivered a message: JeroMQ
 * attaches its connection's metadata (its peer's address) to each message of a plain (NULL) socket
 * as it hands it on.
 */
public final class ReceiveBudget implements MsgAllocator {
    /** Messages up to this size are held while partial; larger ones until collected. */
    public static final int HELD_WHILE_PARTIAL_BYTES = 64 * 1024;
    private final long budgetBytes;
    private final Optional<ConnectionGuard> guard;
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final ReferenceQueue<byte[]> collected = new ReferenceQueue<>();
    /** Keeps each reservation's reference reachable until it is returned. */
    private final Set<Reservation> live = ConcurrentHashMap.newKeySet();

    /** One message's reservation, returned once: at completion (small) or when its bytes are collected. */
    private static final class Reservation extends PhantomReference<byte[]> {
        final int bytes;

        Reservation(byte[] buffer, ReferenceQueue<byte[]> queue) {
            super(buffer, queue);
            this.bytes = buffer.length;
        }
    }

    /** @param budgetBytes the most memory messages being received may hold at once, at least {@value #HELD_WHILE_PARTIAL_BYTES} bytes */
    public ReceiveBudget(long budgetBytes) {
        this(budgetBytes, Optional.empty());
    }

    /** A budget that also tells {@code guard} the connections plain sockets received a message from. */
    public ReceiveBudget(long budgetBytes, Optional<ConnectionGuard> guard) {
        if (budgetBytes < HELD_WHILE_PARTIAL_BYTES) {
            throw new IllegalArgumentException("a receive budget must be at least " + HELD_WHILE_PARTIAL_BYTES
                    + " bytes, got " + budgetBytes);
        }
        this.budgetBytes = budgetBytes;
        this.guard = guard;
    }

    /** Caps {@code socket}'s messages at {@code maxMessageBytes} and reserves them from this budget. */
    public ZMQ.Socket apply(ZMQ.Socket socket, long maxMessageBytes) {
        socket.setMaxMsgSize(maxMessageBytes);
        socket.setMsgAllocator(this);
        return socket;
    }

    @Override
    public Msg allocate(int size) {
        if (size == 0) {
            return new Msg(0);
        }
        returnCollected();
        if (held.addAndGet(size) > budgetBytes) {
            held.addAndGet(-size);
            refused.incrementAndGet();
            return new Msg(0);
        }
        byte[] buffer = new byte[size];
        Reservation reservation = new Reservation(buffer, collected);
        live.add(reservation);
        return new Received(buffer, size <= HELD_WHILE_PARTIAL_BYTES ? reservation : null);
    }

    private void release(Reservation r) {
        if (live.remove(r)) {
            held.addAndGet(-r.bytes);
        }
    }

    private void returnCollected() {
        Reference<? extends byte[]> r;
        while ((r = collected.poll()) != null) {
            release((Reservation) r);
        }
    }

    /** The budget's size. */
    public long budgetBytes() {
        return budgetBytes;
    }

    /** Bytes reserved now (collected messages included until the collector has seen them). */
    public long heldBytes() {
        returnCollected();
        return held.get();
    }

    /** Messages refused because the budget was spent. */
    public long refused() {
        return refused.get();
    }

    /**
     * A message this budget reserved. JeroMQ's decoder only sets its flags and fills its buffer; any
     * other use means the message is complete, which returns a small message's reservation. The
     * methods overridden are those JeroMQ's engine, mechanisms and pipes and the application call on
     * a received message.
     */
    private final class Received extends Msg {
        /** Returned at completion; null for a large message, held until collected. */
        private Reservation whilePartial;

        Received(byte[] buffer, Reservation whilePartial) {
            super(ByteBuffer.wrap(buffer));
            this.whilePartial = whilePartial;
        }

        private void complete() {
            Reservation r = whilePartial;
            if (r != null) {
                whilePartial = null;
                release(r);
            }
        }

        @Override
        public Msg setMetadata(Metadata metadata) {
            complete();
            guard.ifPresent(g -> g.delivered(metadata));
            return super.setMetadata(metadata);
        }

        @Override
        public Metadata getMetadata() {
            complete();
            return super.getMetadata();
        }

        @Override
        public int size() {
            complete();
            return super.size();
        }

        @Override
        public int flags() {
            complete();
            return super.flags();
        }

        @Override
        public boolean hasMore() {
            complete();
            return super.hasMore();
        }

        @Override
        public boolean isCommand() {
            complete();
            return super.isCommand();
        }

        @Override
        public boolean isIdentity() {
            complete();
            return super.isIdentity();
        }

        @Override
        public boolean isDelimiter() {
            complete();
            return super.isDelimiter();
        }

        @Override
        public boolean isCredential() {
            complete();
            return super.isCredential();
        }

        @Override
        public boolean check() {
            complete();
            return super.check();
        }

        @Override
        public byte[] data() {
            complete();
            return super.data();
        }

        @Override
        public byte get() {
            complete();
            return super.get();
        }

        @Override
        public byte get(int index) {
            complete();
            return super.get(index);
        }

        @Override
        public int getBytes(int index, byte[] dst, int off, int len) {
            complete();
            return super.getBytes(index, dst, off, len);
        }

        @Override
        public int getBytes(int index, ByteBuffer bb, int len) {
            complete();
            return super.getBytes(index, bb, len);
        }

        @Override
        public long getLong(int offset) {
            complete();
            return super.getLong(offset);
        }

        @Override
        public int getInt(int offset) {
            complete();
            return super.getInt(offset);
        }

        @Override
        public int getShort(int offset) {
            complete();
            return super.getShort(offset);
        }

        @Override
        public void transfer(ByteBuffer destination, int srcOffset, int srcLength) {
            complete();
            super.transfer(destination, srcOffset, srcLength);
        }
    }
}
