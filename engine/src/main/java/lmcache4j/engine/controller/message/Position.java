package lmcache4j.engine.controller.message;

import java.util.Objects;

/**
 * A {@code (str, str)} tuple of LMCache's move messages: where chunks are or go.
 *
 * @param target   the instance id (in {@code MoveMsg}) or the target URL (in {@code MoveWorkerMsg})
 * @param location the storage backend's name, for example {@code "LocalCPUBackend"}
 */
public record Position(String target, String location) {
    public Position {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(location, "location");
    }
}
