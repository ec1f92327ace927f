package lmcache4j.engine.controller.message;

import java.util.Objects;
import java.util.Optional;

/**
 * LMCache's {@code WorkerInfo} dataclass, one worker in a {@link OrchRetMsg.QueryWorkerInfoRetMsg}
 * (an untagged map of its fields).
 *
 * @param instanceId        the serving instance
 * @param workerId          the worker (tensor-parallel rank) in that instance
 * @param ip                where its control socket listens
 * @param port              its control socket's port
 * @param peerInitUrl       its P2P transfer URL, when P2P is on
 * @param registrationTime  seconds since the epoch when it registered
 * @param lastHeartbeatTime seconds since the epoch of its last heartbeat
 */
public record WorkerInfo(String instanceId, int workerId, String ip, int port, Optional<String> peerInitUrl,
                         double registrationTime, double lastHeartbeatTime) {
    public WorkerInfo {
        Objects.requireNonNull(instanceId, "instanceId");
        Objects.requireNonNull(ip, "ip");
        Objects.requireNonNull(peerInitUrl, "peerInitUrl");
    }
}
