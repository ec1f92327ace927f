package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.zeromq.ZMQ;

import zmq.io.Metadata;

/**
 * {@link ConnectionGuard}'s bookkeeping driven event by event, as JeroMQ's hook would, over real
 * loopback connections and on a clock the test moves: the exact end of the handshake timeout, a
 * connection timed out once, the admission of a CURVE handshake to the right connection of an
 * address, the place per address a closed connection gives back, and events the guard must ignore.
 */
class ConnectionGuardEventsTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(1);
    private static final long START = 1_000_000L;

    private final AtomicLong now = new AtomicLong(START);
    private final ServerSocketChannel listener;
    /** Each connection's two ends: the accepted one (the guard's) and the peer's. */
    private final List<SocketChannel> ends = new ArrayList<>();

    ConnectionGuardEventsTest() throws IOException {
        listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    }

    @AfterEach
    void close() throws IOException {
        for (SocketChannel c : ends) {
            c.close();
        }
        listener.close();
    }

    @Test
    void aConnectionIsTimedOutJustPastTheTimeoutAndOnlyOnce() throws IOException {
        ConnectionGuard guard = guard(new ConnectionLimits(8, 8, 8, TIMEOUT));
        SocketChannel peer = connect();
        SocketChannel server = accepted();
        assertFalse(guard.event(accept(server), false), "taken");
        now.set(START + TIMEOUT.toNanos());
        guard.sweep();
        assertEquals(0, guard.counts().timedOut(), "at the timeout exactly, not yet");
        assertFalse(ended(peer), "the connection is left alone");
        now.addAndGet(1);
        guard.sweep();
        assertEquals(1, guard.counts().timedOut(), "1 ns past it");
        assertTrue(ended(peer), "the connection is shut: its peer reads the end of the stream");
        now.addAndGet(TIMEOUT.toNanos());
        guard.sweep(); // JeroMQ has not closed it yet: still open, already shut
        assertEquals(1, guard.counts().timedOut(), "a shut connection is not timed out again");
        assertFalse(guard.event(disconnect(server), false));
        assertEquals(new ConnectionGuard.Counts(0, 0, 0, 0, 0, 0, 1), guard.counts());
    }

    @Test
    void aProvenConnectionOutlivesTheTimeout() throws IOException {
        ConnectionGuard guard = guard(new ConnectionLimits(8, 8, 8, TIMEOUT));
        connect();
        SocketChannel server = accepted();
        guard.event(accept(server), false);
        guard.delivered(null); // a message without metadata (inproc): nothing to prove
        guard.delivered(new Metadata()); // without a peer address: nothing either
        assertEquals(0, guard.counts().established());
        Metadata metadata = new Metadata();
        metadata.set(Metadata.PEER_ADDRESS, "127.0.0.1:" + ((InetSocketAddress) server.getRemoteAddress()).getPort());
        guard.delivered(metadata);
        guard.delivered(metadata); // its second message proves nothing more
        assertEquals(1, guard.counts().established());
        assertEquals(0, guard.counts().handshaking());
        now.addAndGet(10 * TIMEOUT.toNanos());
        guard.sweep();
        assertEquals(0, guard.counts().timedOut(), "proven: never timed out");
        guard.event(disconnect(server), false);
        assertEquals(0, guard.counts().handshaking(), "a proven connection that closes leaves the handshaking count alone");
        assertEquals(0, guard.counts().open());
    }

    /** Two CURVE handshakes from one address: the first ends unproven, and the admission goes to the other. */
    @Test
    void anAdmissionGoesToTheAddresssConnectionStillWaiting() throws IOException {
        ConnectionGuard guard = guard(new ConnectionLimits(8, 8, 8, TIMEOUT));
        connect();
        SocketChannel first = accepted();
        connect();
        SocketChannel second = accepted();
        guard.event(accept(first), true);
        guard.event(accept(second), true);
        assertEquals(3, guard.unprovenEntries(), "one address listed, with its two connections");
        guard.admitted("10.1.2.3"); // no connection from there
        assertEquals(0, guard.counts().established());
        guard.event(disconnect(first), true); // a stranger gave up; the member's handshake goes on
        assertEquals(1, guard.counts().handshaking());
        guard.admitted("127.0.0.1");
        assertEquals(1, guard.counts().established(), "the waiting connection is admitted: " + guard.counts());
        assertEquals(0, guard.counts().handshaking());
        guard.admitted("127.0.0.1"); // a second admission has no connection left to prove
        assertEquals(1, guard.counts().established());
        assertEquals(0, guard.unprovenEntries());
        now.addAndGet(10 * TIMEOUT.toNanos());
        guard.sweep();
        assertEquals(0, guard.counts().timedOut());
    }

    @Test
    void aClosedConnectionGivesBackExactlyItsPlaceFromItsAddress() throws IOException {
        ConnectionGuard guard = guard(new ConnectionLimits(8, 2, 8, TIMEOUT));
        List<SocketChannel> servers = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            connect();
            servers.add(accepted());
            assertFalse(guard.event(accept(servers.get(i)), false));
        }
        guard.event(disconnect(servers.get(0)), false);
        connect();
        assertFalse(guard.event(accept(accepted()), false), "the closed one's place is free");
        connect();
        assertTrue(guard.event(accept(accepted()), false), "the second and the new one hold both places");
        assertEquals(1, guard.counts().refusedPerHost(), guard.counts().toString());
    }

    @Test
    void eventsWithoutAChannelAndOthersThanAcceptOrDisconnectAreIgnored() throws IOException {
        ConnectionGuard guard = guard(new ConnectionLimits(1, 1, 1, TIMEOUT));
        assertFalse(guard.event(new zmq.ZMQ.Event(ZMQ.EVENT_ACCEPTED, "tcp://127.0.0.1:1", 7), false), "no channel");
        connect();
        SocketChannel server = accepted();
        assertFalse(guard.event(new zmq.ZMQ.Event(ZMQ.EVENT_HANDSHAKE_PROTOCOL, "tcp://127.0.0.1:1", server), false));
        assertEquals(0, guard.counts().open());
        assertFalse(guard.event(accept(server), false));
        assertFalse(guard.event(disconnect(server), false), "a disconnect never refuses");
        assertEquals(new ConnectionGuard.Counts(0, 0, 0, 0, 0, 0, 0), guard.counts());
    }

    private ConnectionGuard guard(ConnectionLimits limits) {
        return new ConnectionGuard("test", limits, now::get);
    }

    private SocketChannel connect() throws IOException {
        SocketChannel peer = SocketChannel.open(listener.getLocalAddress());
        ends.add(peer);
        return peer;
    }

    private SocketChannel accepted() throws IOException {
        SocketChannel server = listener.accept();
        ends.add(server);
        return server;
    }

    private static zmq.ZMQ.Event accept(SocketChannel server) {
        return new zmq.ZMQ.Event(ZMQ.EVENT_ACCEPTED, "tcp://127.0.0.1:1", server);
    }

    private static zmq.ZMQ.Event disconnect(SocketChannel server) {
        return new zmq.ZMQ.Event(ZMQ.EVENT_DISCONNECTED, "tcp://127.0.0.1:1", server);
    }

    /** Whether the peer reads the end of the stream (the guard shut the connection). */
    private static boolean ended(SocketChannel peer) throws IOException {
        peer.configureBlocking(false);
        try {
            long deadline = System.nanoTime() + 200_000_000L;
            while (System.nanoTime() < deadline) {
                if (peer.read(ByteBuffer.allocate(16)) < 0) {
                    return true;
                }
                Thread.onSpinWait();
            }
            return false;
        } finally {
            peer.configureBlocking(true);
        }
    }
}
