package lmcache4j.engine.zmq;

import org.zeromq.ZMQ;

/**
 * How lmcache4j's JeroMQ sockets connect. JeroMQ 0.6.0 sometimes leaves a new connection in its
 * ZMTP handshake when the connecting socket already has a burst of messages queued: nothing flows
 * until the handshake timer (ZMQ_HANDSHAKE_IVL, 30 s by default) drops the connection and it is
 * made again, after which every queued message arrives. Measured here: a PUSH that connected and
 * queued 16,000 frames stalled for 30.1–30.3 s in 6 to 9 of 150 tries on a loaded 2-vCPU machine;
 * with the timer at 1 s on the connecting socket the worst try took 1.2 s, and no message was
 * lost. (The peer's own timer does not help: it is the connecting side that waits.) This was the
 * "rare 30 s stall" of the controller benchmark and of tests whose engines report right after
 * starting.
 */
public final class ZmqConnect {
    /**
     * The handshake timer of connecting sockets: long enough for a loaded machine to finish a real
     * handshake (loopback ones take well under a millisecond), short enough that a stuck one costs
     * seconds, not half a minute.
     */
    public static final int HANDSHAKE_MILLIS = 2_000;

    private ZmqConnect() {
    }

    /** Sets the handshake timer on {@code socket}, then connects it to {@code address}. */
    public static ZMQ.Socket connect(ZMQ.Socket socket, String address) {
        socket.setHandshakeIvl(HANDSHAKE_MILLIS);
        socket.connect(address);
        return socket;
    }
}
