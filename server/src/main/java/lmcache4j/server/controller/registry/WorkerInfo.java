package lmcache4j.server.controller.registry;

import java.time.Instant;
import java.util.Optional;

/**
 * What the controller knows of a registered worker: where its REP socket is ({@code ip:port}, from
 * its RegisterMsg or HeartbeatMsg), its P2P URL if any, and when it registered and last beat
 * (LMCache's {@code WorkerInfo}).
 */
public record WorkerInfo(WorkerKey key, String ip, int port, Optional<String> peerInitUrl, Instant registeredAt,
                         Instant lastHeartbeat) {
    /** The same worker, seen alive at {@code now}. */
    WorkerInfo beatAt(Instant now) {
        return new WorkerInfo(key, ip, port, peerInitUrl, registeredAt, now);
    }

    /** Whether this worker's REP socket is at {@code ip:port}. */
    boolean at(String otherIp, int otherPort) {
        return port == otherPort && ip.equals(otherIp);
    }

    /** {@code ip:port} of the worker's REP socket. */
    public String replyAddress() {
        return (ip.indexOf(':') >= 0 ? "[" + ip + "]" : ip) + ":" + port;
    }
}
