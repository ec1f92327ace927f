package lmcache4j.engine.security;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Which connections to one CURVE server socket closed in the ZeroMQ greeting, from the socket's
 * monitor events: a peer without the deployment secret speaks ZeroMQ's NULL mechanism, and JeroMQ
 * drops it at the greeting's mechanism check, before any ZAP request, with no event but the
 * disconnect. The greeting's end ({@code EVENT_HANDSHAKE_PROTOCOL}) names no connection, so a
 * connection counts only when it is certain: it was accepted and disconnected with no greeting
 * ending while it was the one waiting. Greetings that overlap are forgotten, never counted: a
 * legitimate peer is never reported, and a refused one may go uncounted only while another peer
 * connects at the same moment.
 */
final class GreetingWatch {
    /** Connections accepted whose greeting has not been seen to end: connection → the peer's address. */
    private final Map<Object, String> greeting = new LinkedHashMap<>();

    /** {@code EVENT_ACCEPTED}: {@code connection} (the channel) from {@code peer}. */
    void accepted(Object connection, String peer) {
        greeting.put(connection, peer);
    }

    /** {@code EVENT_HANDSHAKE_PROTOCOL}: some connection's greeting ended well. */
    void greeted() {
        // One waiting: it was that one. Several: no telling which, so none of them is ever counted.
        greeting.clear();
    }

    /** {@code EVENT_DISCONNECTED}: the peer of {@code connection} when it closed in the greeting, else empty. */
    Optional<String> disconnected(Object connection) {
        return Optional.ofNullable(greeting.remove(connection));
    }
}
