package lmcache4j.engine.zmq;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

import org.zeromq.ZMQ;

import zmq.io.Metadata;
import zmq.io.mechanism.Mechanisms;

/**
 * Bounds the connections a process's bound ZeroMQ sockets accept ({@link ConnectionLimits}), so
 * that what strangers can make it hold is a number derived from settings. JeroMQ accepts every
 * connection, and keeps one that greeted and then stopped forever (its handshake timer ends with
 * the greeting; libzmq's runs until the security mechanism completes), with its engine, session,
 * pipes and a partial message ({@link ReceiveBudget} counts those).
 *
 * <p>A guard watches its sockets' accepts and disconnects through JeroMQ's event hook, on the I/O
 * thread that accepts: a connection past a limit (in all, from one peer address, not yet proven)
 * is shut at once, before JeroMQ reads a byte of it. A connection proves itself, and then counts as
 * established, by completing what a stranger cannot:
 * <ul>
 *   <li>on a CURVE socket, the handshake, which the context's {@code CurveGate} admits only with the
 *       deployment's key: it tells the guard the peer's address ({@link #admitted}). The ZAP request
 *       names the address only, not the port, so the admission goes to that address's newest
 *       connection not yet proven (a real handshake takes milliseconds; a stranger's stalled one is
 *       old);</li>
 *   <li>on a plain socket, where any peer completes the handshake, the first message: JeroMQ
 *       attaches the connection's peer address and port to it as it hands it on, which the socket's
 *       {@link ReceiveBudget} passes here ({@link #delivered}).</li>
 * </ul>
 * On every tick of its context's I/O threads the guard shuts connections that have not proven
 * themselves within the handshake timeout, greeted or not. Shutting a channel's input and output
 * makes JeroMQ read the end of its stream and close the connection its usual way. Thread-safe.
 */
public final class ConnectionGuard {
    private static final System.Logger LOG = System.getLogger(ConnectionGuard.class.getName());

    private final String name;
    private final ConnectionLimits limits;
    private final long timeoutNanos;
    /** {@link System#nanoTime}, but in tests. */
    private final LongSupplier nanoClock;
    // Guarded by this: every connection open on the watched sockets, by channel; the handshaking ones of
    // CURVE sockets by host (newest last) and of plain sockets by peer address; the counts.
    private final Map<SelectableChannel, Connection> open = new IdentityHashMap<>();
    private final Map<String, Deque<Connection>> unprovenCurve = new HashMap<>();
    private final Map<String, Connection> unprovenPlain = new HashMap<>();
    private final Map<String, Integer> perHost = new HashMap<>();
    private int handshaking;
    private long refusedTotal;
    private long refusedPerHost;
    private long refusedHandshaking;
    private long timedOut;
    private long established;
    /** Unproven connections of plain sockets: a delivery is looked up only while there are some. */
    private volatile int unprovenPlainCount;

    private static final class Connection {
        final SocketChannel channel;
        final String host;
        final String peer;
        final boolean curve;
        final long acceptedNanos;
        boolean proven;
        boolean shut;

        Connection(SocketChannel channel, String host, String peer, boolean curve, long acceptedNanos) {
            this.channel = channel;
            this.host = host;
            this.peer = peer;
            this.curve = curve;
            this.acceptedNanos = acceptedNanos;
        }
    }

    /**
     * What the guard has seen: connections open now, and of those not yet proven (in their
     * handshake); connections proven, refused at each limit and timed out since it started.
     */
    public record Counts(int open, int handshaking, long established, long refusedTotal, long refusedPerHost,
                         long refusedHandshaking, long timedOut) {
        /** Connections refused for any limit. */
        public long refused() {
            return refusedTotal + refusedPerHost + refusedHandshaking;
        }
    }

    /** A guard named {@code name} (in its warnings) enforcing {@code limits} on the sockets it will watch. */
    public ConnectionGuard(String name, ConnectionLimits limits) {
        this(name, limits, System::nanoTime);
    }

    /** As {@link #ConnectionGuard(String, ConnectionLimits)}, reading the time from {@code nanoClock} (tests). */
    ConnectionGuard(String name, ConnectionLimits limits, LongSupplier nanoClock) {
        this.name = Objects.requireNonNull(name, "name");
        this.limits = Objects.requireNonNull(limits, "limits");
        this.timeoutNanos = limits.handshakeTimeout().toNanos();
        this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
    }

    public ConnectionLimits limits() {
        return limits;
    }

    /**
     * Watches {@code socket}, a socket of {@code context} that binds: call after its security is set
     * ({@code DeploymentSecret.serve}) and before it binds. Its connections count with those of the
     * guard's other sockets. A plain socket's messages must come through a {@link ReceiveBudget} that
     * reports to this guard, or none of its connections proves itself. A socket has one event hook:
     * a monitored socket cannot be watched.
     */
    public ZMQ.Socket watch(OwnedZContext context, ZMQ.Socket socket) {
        return watch(context, socket, event -> { }, 0);
    }

    /**
     * As {@link #watch(OwnedZContext, ZMQ.Socket)}, handing {@code also} the socket's events of
     * {@code alsoEvents} too (a {@code CurveGate}'s watcher), since a socket has one event hook.
     */
    public ZMQ.Socket watch(OwnedZContext context, ZMQ.Socket socket, zmq.ZMQ.EventConsummer also, int alsoEvents) {
        Objects.requireNonNull(also, "also");
        boolean curve = socket.base().getSocketOptx(zmq.ZMQ.ZMQ_MECHANISM) == Mechanisms.CURVE;
        int own = ZMQ.EVENT_ACCEPTED | ZMQ.EVENT_DISCONNECTED;
        context.onTick(this, poller -> sweep());
        socket.base().setEventHook((zmq.ZMQ.EventConsummer) event -> {
            boolean refused = (event.event & own) != 0 && event(event, curve);
            if ((event.event & alsoEvents) != 0 && !refused) {
                also.consume(event); // not the accept of a connection refused here: the other watcher never sees it
            }
        }, own | alsoEvents);
        return socket;
    }

    public synchronized Counts counts() {
        return new Counts(open.size(), handshaking, established, refusedTotal, refusedPerHost, refusedHandshaking, timedOut);
    }

    /**
     * Entries on the lists of connections not yet proven (addresses and connections): every ended or
     * proven connection must leave them, or strangers that come and go would grow them without end.
     */
    synchronized int unprovenEntries() {
        int entries = unprovenPlain.size() + unprovenCurve.size();
        for (Deque<Connection> waiting : unprovenCurve.values()) {
            entries += waiting.size();
        }
        return entries;
    }

    /**
     * The context's CURVE gate admitted a handshake from {@code host} (the deployment's key): that
     * address's newest connection not yet proven is established.
     */
    public void admitted(String host) {
        synchronized (this) {
            Deque<Connection> waiting = unprovenCurve.get(host);
            Connection c = waiting == null ? null : waiting.pollLast();
            if (c != null) {
                prove(c);
            }
        }
    }

    /** A plain socket received a message from the connection {@code metadata} describes: it is established. */
    void delivered(Metadata metadata) {
        if (unprovenPlainCount == 0 || metadata == null) {
            return; // the common case: every connection proven, nothing to look up
        }
        String peer = metadata.get(Metadata.PEER_ADDRESS);
        if (peer == null) {
            return;
        }
        synchronized (this) {
            Connection c = unprovenPlain.get(peer);
            if (c != null) {
                prove(c);
            }
        }
    }

    /**
     * JeroMQ's event hook: runs on the I/O thread that accepted or lost the connection. True when it
     * refused the connection accepted.
     */
    boolean event(zmq.ZMQ.Event event, boolean curve) {
        if (!(event.arg instanceof SocketChannel channel)) {
            return false;
        }
        if (event.event == ZMQ.EVENT_ACCEPTED) {
            return !accepted(channel, curve);
        } else if (event.event == ZMQ.EVENT_DISCONNECTED) {
            synchronized (this) {
                forget(channel);
            }
        }
        return false;
    }

    /** True when the connection is taken, false when it was past a limit and is shut. */
    private boolean accepted(SocketChannel channel, boolean curve) {
        InetSocketAddress remote = remote(channel);
        String host = remote == null ? "?" : remote.getAddress().getHostAddress();
        String refusal = null;
        long refusedSoFar;
        synchronized (this) {
            if (open.size() >= limits.maxConnections()) {
                refusedTotal++;
                refusal = "connections (" + limits.maxConnections() + ")";
            } else if (perHost.getOrDefault(host, 0) >= limits.maxConnectionsPerHost()) {
                refusedPerHost++;
                refusal = "connections from one address (" + limits.maxConnectionsPerHost() + ")";
            } else if (handshaking >= limits.maxHandshaking()) {
                refusedHandshaking++;
                refusal = "connections in their handshake (" + limits.maxHandshaking() + ")";
            } else {
                // JeroMQ's Peer-Address metadata: the address as Java prints it, a colon, the port.
                String peer = remote == null ? "?" : host + ":" + remote.getPort();
                Connection c = new Connection(channel, host, peer, curve, nanoClock.getAsLong());
                open.put(channel, c);
                perHost.merge(host, 1, Integer::sum);
                handshaking++;
                if (curve) {
                    unprovenCurve.computeIfAbsent(host, h -> new ArrayDeque<>()).addLast(c);
                } else {
                    unprovenPlain.put(peer, c);
                    unprovenPlainCount++;
                }
            }
            refusedSoFar = refusedTotal + refusedPerHost + refusedHandshaking;
        }
        if (refusal != null) {
            if (refusedSoFar % 1000 == 1) {
                LOG.log(System.Logger.Level.WARNING, name + ": refused a connection from " + host + " at the limit of "
                        + refusal + "; " + refusedSoFar + " refused so far");
            }
            shut(channel);
        }
        return refusal == null;
    }

    /** Shuts connections past the handshake timeout; runs on the context's I/O threads' ticks. */
    void sweep() {
        long now = nanoClock.getAsLong();
        List<SocketChannel> late = new ArrayList<>();
        synchronized (this) {
            if (handshaking == 0) {
                return;
            }
            for (Connection c : new ArrayList<>(open.values())) {
                if (c.proven || c.shut) {
                    continue;
                }
                if (!c.channel.isOpen()) {
                    forget(c.channel); // closed without a disconnect event (its socket closed)
                } else if (now - c.acceptedNanos > timeoutNanos) {
                    c.shut = true;
                    timedOut++;
                    late.add(c.channel);
                }
            }
        }
        late.forEach(ConnectionGuard::shut);
    }

    /** Guarded by this. */
    private void prove(Connection c) {
        if (c.proven) {
            return;
        }
        c.proven = true;
        unlistUnproven(c);
        established++;
    }

    /** Guarded by this: takes {@code c} off the lists of handshaking connections. */
    private void unlistUnproven(Connection c) {
        handshaking--;
        if (c.curve) {
            Deque<Connection> waiting = unprovenCurve.get(c.host);
            if (waiting != null) {
                waiting.remove(c);
                if (waiting.isEmpty()) {
                    unprovenCurve.remove(c.host);
                }
            }
        } else if (unprovenPlain.remove(c.peer, c)) {
            unprovenPlainCount--;
        }
    }

    /** Forgets a connection that closed; guarded by this. */
    private void forget(SelectableChannel channel) {
        Connection c = open.remove(channel);
        if (c == null) {
            return;
        }
        perHost.computeIfPresent(c.host, (h, n) -> n == 1 ? null : n - 1);
        if (!c.proven) {
            unlistUnproven(c);
        }
    }

    /** Ends the connection: JeroMQ reads the end of the stream and closes it as it closes any. */
    private static void shut(SocketChannel channel) {
        try {
            channel.shutdownInput();
            channel.shutdownOutput();
        } catch (IOException e) {
            // already closed: nothing to end
        }
    }

    private static InetSocketAddress remote(SocketChannel channel) {
        try {
            return channel.getRemoteAddress() instanceof InetSocketAddress a ? a : null;
        } catch (IOException e) {
            return null;
        }
    }
}
