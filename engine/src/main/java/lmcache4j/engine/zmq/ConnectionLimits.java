package lmcache4j.engine.zmq;

import java.time.Duration;
import java.util.Objects;

import lmcache4j.engine.config.ExtraConfigKeys;
import lmcache4j.engine.config.LMCacheEngineConfig;

/**
 * What the connections a stranger can open to a process's bound ZeroMQ sockets may hold, before and
 * after their handshake ({@link ConnectionGuard}): the connections open at once, those from one
 * peer address, those not yet proven (a CURVE socket's strangers never complete the handshake),
 * and how long a connection may take to prove itself, greeted or not.
 *
 * @param maxConnections        connections open at once on the guarded sockets together; a new one past it is closed
 * @param maxConnectionsPerHost of those, from one peer address
 * @param maxHandshaking        of those, not yet proven: in their handshake on a CURVE socket, before their first
 *                              message on a plain one (where any peer completes the handshake)
 * @param handshakeTimeout      a connection not proven by then is closed
 */
public record ConnectionLimits(int maxConnections, int maxConnectionsPerHost, int maxHandshaking,
                               Duration handshakeTimeout) {
    /**
     * The heap a connection JeroMQ accepted holds before it has sent a message: its engine (greeting
     * buffers), session, pipes and security mechanism. Measured with JeroMQ 0.6.0: 8.2 KiB a connection
     * that greeted, NULL or CURVE, whether or not it then declared a message (a partial message's
     * bytes are the {@link ReceiveBudget}'s); rounded up.
     */
    public static final long HEAP_BYTES_PER_CONNECTION = 12 * 1024;
    /** Off the heap, per connection: the engine's decoder and encoder batch buffers, 8 KiB each. */
    public static final long DIRECT_BYTES_PER_CONNECTION = 16 * 1024;
    /** JeroMQ's handshake timer's default, and libzmq's: a connection not proven by then is closed. */
    public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(30);
    /** The shortest handshake timeout accepted: a loaded machine's real handshakes take milliseconds, a WAN's a few round trips. */
    public static final Duration MIN_HANDSHAKE_TIMEOUT = Duration.ofMillis(100);

    public ConnectionLimits {
        Objects.requireNonNull(handshakeTimeout, "handshakeTimeout");
        if (maxConnections < 1 || maxConnectionsPerHost < 1 || maxHandshaking < 1) {
            throw new IllegalArgumentException("connection limits must be at least 1: connections " + maxConnections
                    + ", per host " + maxConnectionsPerHost + ", handshaking " + maxHandshaking);
        }
        if (maxConnectionsPerHost > maxConnections || maxHandshaking > maxConnections) {
            throw new IllegalArgumentException("the connections per host (" + maxConnectionsPerHost + ") and in their"
                    + " handshake (" + maxHandshaking + ") cannot exceed the connections in all (" + maxConnections + ")");
        }
        if (handshakeTimeout.compareTo(MIN_HANDSHAKE_TIMEOUT) < 0 || handshakeTimeout.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("the handshake timeout must be between 100 ms and 1 h, got "
                    + handshakeTimeout.toMillis() + " ms");
        }
    }

    /**
     * The limits of a server whose legitimate clients open about {@code expected} connections at
     * most: that many plus 256, no address more than 1,024 of them, 256 at a time in their handshake,
     * proven within {@link #DEFAULT_HANDSHAKE_TIMEOUT}.
     */
    public static ConnectionLimits forExpected(int expected) {
        int total = Math.addExact(expected, 256);
        return new ConnectionLimits(total, Math.min(total, 1_024), Math.min(total, 256), DEFAULT_HANDSHAKE_TIMEOUT);
    }

    /**
     * The heap strangers can make the guarded sockets hold with connections, apart from the receive
     * budget (which bounds their partial messages): with CURVE they never prove themselves, so at
     * most {@code maxHandshaking} connections are theirs; without, any connection may be.
     */
    public long strangerHeapBytes(boolean curve) {
        return (curve ? maxHandshaking : maxConnections) * HEAP_BYTES_PER_CONNECTION;
    }

    /** As {@link #strangerHeapBytes}, off the heap (JeroMQ's direct buffers). */
    public long strangerDirectBytes(boolean curve) {
        return (curve ? maxHandshaking : maxConnections) * DIRECT_BYTES_PER_CONNECTION;
    }

    /**
     * The limits of an engine's bound sockets (its controller worker's control socket, its lookup
     * server's), from {@code extra_config}'s {@code zmq.*} keys; a combination that cannot hold is a
     * configuration error naming the keys.
     */
    public static ConnectionLimits of(LMCacheEngineConfig config) {
        var extra = config.extraConfig();
        try {
            return new ConnectionLimits(ExtraConfigKeys.ZMQ_MAX_CONNECTIONS.valueOrDefault(extra),
                    ExtraConfigKeys.ZMQ_MAX_CONNECTIONS_PER_HOST.valueOrDefault(extra),
                    ExtraConfigKeys.ZMQ_MAX_HANDSHAKING.valueOrDefault(extra),
                    Duration.ofMillis(Math.round(ExtraConfigKeys.ZMQ_HANDSHAKE_TIMEOUT.valueOrDefault(extra) * 1000)));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("extra_config zmq.max_connections, zmq.max_connections_per_host, "
                    + "zmq.max_handshaking, zmq.handshake_timeout: " + e.getMessage(), e);
        }
    }

    public ConnectionLimits withHandshakeTimeout(Duration timeout) {
        return new ConnectionLimits(maxConnections, maxConnectionsPerHost, maxHandshaking, timeout);
    }
}
