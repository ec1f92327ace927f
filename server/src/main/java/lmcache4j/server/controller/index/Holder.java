package lmcache4j.server.controller.index;

import java.util.Objects;

/**
 * Who holds a chunk: one worker (a tensor-parallel rank) of one serving instance, in one storage
 * location, named as LMCache names its backends ({@code LocalCPUBackend}, {@code LocalDiskBackend},
 * ...).
 */
public record Holder(String instanceId, int workerId, String location) {
    public Holder {
        Objects.requireNonNull(instanceId, "instanceId");
        Objects.requireNonNull(location, "location");
    }
}
