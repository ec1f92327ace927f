package lmcache4j.engine.zmq;

import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.zeromq.ZMQ;

import zmq.Msg;
import zmq.msg.MsgAllocator;

/**
 * A bound on the memory ZeroMQ sockets reserve for messages being received. JeroMQ reserves a
 * message's declared size as soon as its header arrives, before a byte of it (and, on a CURVE
 * socket, before the handshake), so a few kilobytes of headers from many connections could make it
 * reserve gigabytes, CURVE or not ({@code DeclaredFrameFloodTest} floods a controller so).
 * Installed as the sockets' message allocator, this budget refuses a reservation that would take
 * the messages it tracks past its size: the message is cut to nothing, which ends a CURVE peer's
 * connection at once (its handshake or its next message fails to decrypt) and desynchronises a plain
 * one, whose bytes the socket then reads as frames of the same bounded size.
 *
 * <p>Messages of at most {@value #UNTRACKED_BYTES} bytes are not tracked (every ordinary control
 * message). A tracked message's reservation is returned once its bytes (the array behind the
 * message's buffer) have been collected: the message was taken by the application and dropped, or
 * its connection was dropped. The array is what is tracked, not the buffer handed to the message:
 * JeroMQ's message keeps a duplicate of that buffer, so the buffer itself is garbage at once while
 * the message still holds every byte. The next reservation, or {@link #heldBytes()}, finds returned
 * reservations in a reference queue. No thread of its own.
 */
public final class ReceiveBudget implements MsgAllocator {
    /** Messages this small are not counted: LMCache's control messages are. */
    public static final int UNTRACKED_BYTES = 64 * 1024;
    private final long budgetBytes;
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final ReferenceQueue<byte[]> collected = new ReferenceQueue<>();
    /** Keeps each reservation's reference reachable until its bytes have been collected. */
    private final Set<Reservation> live = ConcurrentHashMap.newKeySet();

    private static final class Reservation extends PhantomReference<byte[]> {
        final long bytes;

        Reservation(byte[] array, ReferenceQueue<byte[]> queue) {
            super(array, queue);
            this.bytes = array.length;
        }
    }

    /** @param budgetBytes the most memory tracked messages may hold at once, at least one untracked message's size */
    public ReceiveBudget(long budgetBytes) {
        if (budgetBytes < UNTRACKED_BYTES) {
            throw new IllegalArgumentException("a receive budget must be at least " + UNTRACKED_BYTES + " bytes, got "
                    + budgetBytes);
        }
        this.budgetBytes = budgetBytes;
    }

    /** Caps {@code socket}'s messages at {@code maxMessageBytes} and reserves them from this budget. */
    public ZMQ.Socket apply(ZMQ.Socket socket, long maxMessageBytes) {
        socket.setMaxMsgSize(maxMessageBytes);
        socket.setMsgAllocator(this);
        return socket;
    }

    @Override
    public Msg allocate(int size) {
        if (size <= UNTRACKED_BYTES) {
            return new Msg(size);
        }
        returnCollected();
        if (held.addAndGet(size) > budgetBytes) {
            held.addAndGet(-size);
            refused.incrementAndGet();
            return new Msg(0);
        }
        byte[] array = new byte[size];
        live.add(new Reservation(array, collected));
        return new Msg(ByteBuffer.wrap(array));
    }

    private void returnCollected() {
        Reference<? extends byte[]> r;
        while ((r = collected.poll()) != null) {
            if (live.remove(r)) {
                held.addAndGet(-((Reservation) r).bytes);
            }
        }
    }

    /** The budget's size. */
    public long budgetBytes() {
        return budgetBytes;
    }

    /** Bytes tracked messages hold now (collected ones included until the collector has seen them). */
    public long heldBytes() {
        returnCollected();
        return held.get();
    }

    /** Messages refused because the budget was spent. */
    public long refused() {
        return refused.get();
    }
}
