package lmcache4j.server.controller.net;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.server.controller.Endpoint;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * The controller's REQ sockets to workers' REP sockets, one per worker address, for control
 * messages (clear, pin, move, health, check-finish). A REQ socket alternates send and receive
 * strictly, so each is used by one caller at a time (a lock per worker) and, once a reply timed
 * out, closed and recreated for the next request: a REQ socket that missed its reply can send
 * nothing else.
 */
public final class WorkerConnections implements AutoCloseable {
    private final ZContext context;
    private final Optional<DeploymentSecret> secret;
    private final Duration timeout;
    private final long maxFrameBytes;
    private final Map<String, Connection> connections = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** One worker's socket and the lock that serializes its requests. */
    private static final class Connection {
        final ReentrantLock lock = new ReentrantLock();
        ZMQ.Socket socket;
        volatile boolean forgotten;
    }

    /** Why a request got no reply. */
    public enum Failure {
        /** no reply within the timeout; the socket was recreated */
        TIMEOUT,
        /** the controller is closing */
        CLOSED
    }

    /** A reply, or why there is none. */
    public record Reply(Optional<byte[]> payload, Optional<Failure> failure) {
        static Reply of(byte[] payload) {
            return new Reply(Optional.of(payload), Optional.empty());
        }

        static Reply failed(Failure f) {
            return new Reply(Optional.empty(), Optional.of(f));
        }
    }

    public WorkerConnections(ZContext context, Duration timeout, long maxFrameBytes, Optional<DeploymentSecret> secret) {
        this.secret = Objects.requireNonNull(secret, "secret");
        this.context = Objects.requireNonNull(context, "context");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.maxFrameBytes = maxFrameBytes;
    }

    /**
     * Sends {@code payload} to the REP socket at {@code address} ({@code host:port}) and waits for
     * one reply frame: at most twice the timeout (two tries), plus the time other requests to the
     * same worker hold its socket.
     */
    public Reply request(String address, byte[] payload) {
        Connection c = connections.computeIfAbsent(address, a -> new Connection());
        c.lock.lock();
        try {
            // Lazy pirate: a request that got no reply is sent once more on a fresh socket. On a loaded
            // machine a first exchange on a new connection was seen to go unanswered now and then
            // (about one in 30 with a 1 s timeout); a second try on a new socket got through.
            Reply r = attempt(c, address, payload);
            return r.payload().isPresent() || closed ? r : attempt(c, address, payload);
        } finally {
            if (c.forgotten) {
                drop(c); // the worker left while this request ran
            }
            c.lock.unlock();
        }
    }

    private Reply attempt(Connection c, String address, byte[] payload) {
        if (closed) {
            return Reply.failed(Failure.CLOSED);
        }
        try {
            if (c.socket == null) {
                c.socket = open(address);
            }
            if (!c.socket.send(payload, 0)) {
                drop(c);
                return Reply.failed(Failure.TIMEOUT);
            }
            byte[] reply = c.socket.recv(0);
            if (reply == null) {
                drop(c);
                return Reply.failed(closed ? Failure.CLOSED : Failure.TIMEOUT);
            }
            while (c.socket.hasReceiveMore()) { // a REP answers one frame; extra frames are ignored
                c.socket.recv(0);
            }
            return Reply.of(reply);
        } catch (org.zeromq.ZMQException e) {
            drop(c);
            return Reply.failed(closed ? Failure.CLOSED : Failure.TIMEOUT);
        }
    }

    /**
     * Closes the socket to a worker that left (a later request opens a new one). Never waits: the
     * ingestion thread calls it; a request in flight on that socket closes it when it ends.
     */
    public void forget(String address) {
        Connection c = connections.remove(address);
        if (c != null) {
            c.forgotten = true;
            if (c.lock.tryLock()) {
                try {
                    drop(c);
                } finally {
                    c.lock.unlock();
                }
            }
        }
    }

    private ZMQ.Socket open(String address) {
        ZMQ.Socket s = context.createSocket(SocketType.REQ);
        secret.ifPresent(k -> k.connectAsMember(s));
        s.setLinger(0);
        s.setReceiveTimeOut((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        s.setSendTimeOut((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        s.setMaxMsgSize(maxFrameBytes);
        s.connect(Endpoint.parse(address).connectAddress());
        return s;
    }

    private void drop(Connection c) {
        if (c.socket != null) {
            context.destroySocket(c.socket);
            c.socket = null;
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Connection c : connections.values()) {
            c.lock.lock();
            try {
                drop(c);
            } finally {
                c.lock.unlock();
            }
        }
        connections.clear();
    }
}
