package lmcache4j.server.controller.internal;

import java.lang.invoke.MethodHandles;
import java.util.Objects;
import java.util.function.Function;

import lmcache4j.server.controller.ControllerServer;
import lmcache4j.server.controller.index.ChunkIndex;
import lmcache4j.server.controller.registry.WorkerRegistry;

/**
 * A running controller's index and worker registry, for lmcache4j's own benchmarks (they fill the
 * index directly, or wait for a worker to register). Only the benchmarks see this package; the
 * controller hands its accessors over when its class loads, so its public face names neither type.
 */
public final class ControllerParts {
    private static volatile Function<ControllerServer, ChunkIndex> indexes;
    private static volatile Function<ControllerServer, WorkerRegistry> registries;

    private ControllerParts() {
    }

    /** The chunk index of {@code controller}. */
    public static ChunkIndex index(ControllerServer controller) {
        ensureHandedOver();
        return indexes.apply(Objects.requireNonNull(controller, "controller"));
    }

    /** The worker registry of {@code controller}. */
    public static WorkerRegistry registry(ControllerServer controller) {
        ensureHandedOver();
        return registries.apply(Objects.requireNonNull(controller, "controller"));
    }

    /** Called by {@link ControllerServer} when its class loads, and by nothing else. */
    public static void handOver(Function<ControllerServer, ChunkIndex> index, Function<ControllerServer, WorkerRegistry> registry) {
        if (indexes != null) {
            throw new IllegalStateException("the controller's parts were handed over already");
        }
        registries = Objects.requireNonNull(registry, "registry");
        indexes = Objects.requireNonNull(index, "index");
    }

    private static void ensureHandedOver() {
        try {
            MethodHandles.lookup().ensureInitialized(ControllerServer.class); // its static initialiser hands them over
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }
}
