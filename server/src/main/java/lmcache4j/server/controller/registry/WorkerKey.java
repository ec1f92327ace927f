package lmcache4j.server.controller.registry;

import java.util.Objects;

/** One worker of one serving instance: LMCache's {@code (instance_id, worker_id)}. */
public record WorkerKey(String instanceId, int workerId) {
    public WorkerKey {
        Objects.requireNonNull(instanceId, "instanceId");
    }

    @Override
    public String toString() {
        return instanceId + ":" + workerId;
    }
}
