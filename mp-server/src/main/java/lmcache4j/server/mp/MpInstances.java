package lmcache4j.server.mp;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import lmcache4j.server.mp.store.ObjectLayout;

/**
 * The workers registered for the engine-driven transfer ({@code
 * register_kv_cache_engine_driven_context}), by instance id (the worker's PID), and the chunk
 * layout each (model, world size) uses. A layout lives while an instance of its model uses it. An
 * instance silent for longer than the reap timeout is dropped as if it had unregistered.
 * Confined to the server's loop thread.
 */
final class MpInstances {
    /** A registered worker. */
    record Instance(long instanceId, String model, int worldSize, ObjectLayout layout, boolean mla, int blockSize) {
    }

    private record ModelKey(String model, int worldSize) {
    }

    private static final class Shared {
        final ObjectLayout layout;
        int users;

        Shared(ObjectLayout layout) {
            this.layout = layout;
        }
    }

    private final int maxInstances;
    private final Map<Long, Instance> instances = new HashMap<>();
    private final Map<Long, Long> lastSeen = new HashMap<>();
    private final Map<ModelKey, Shared> layouts = new HashMap<>();

    MpInstances(int maxInstances) {
        if (maxInstances < 1) {
            throw new IllegalArgumentException("max instances must be at least 1, got " + maxInstances);
        }
        this.maxInstances = maxInstances;
    }

    /**
     * Registers {@code instance}, or refreshes it when its id is registered already (LMCache answers
     * a repeated registration with the same pool). Empty on success, else why it was refused.
     */
    Optional<String> register(Instance instance, long now) {
        Instance known = instances.get(instance.instanceId());
        if (known != null) {
            lastSeen.put(instance.instanceId(), now);
            return known.model().equals(instance.model()) && known.worldSize() == instance.worldSize()
                    && known.layout().equals(instance.layout()) ? Optional.empty()
                    : Optional.of("instance " + instance.instanceId() + " is registered already with another model or layout");
        }
        if (instances.size() >= maxInstances) {
            return Optional.of("this server takes at most " + maxInstances + " registered instances");
        }
        ModelKey key = new ModelKey(instance.model(), instance.worldSize());
        Shared shared = layouts.get(key);
        if (shared != null && !shared.layout.equals(instance.layout())) {
            return Optional.of("model " + instance.model() + " (world size " + instance.worldSize() + ") is registered with"
                    + " chunk layout " + shared.layout + "; this instance asks for " + instance.layout());
        }
        if (shared == null) {
            shared = new Shared(instance.layout());
            layouts.put(key, shared);
        }
        shared.users++;
        instances.put(instance.instanceId(), instance);
        lastSeen.put(instance.instanceId(), now);
        return Optional.empty();
    }

    /** The instance, touched (every transfer call refreshes its liveness). */
    Optional<Instance> touch(long instanceId, long now) {
        Instance i = instances.get(instanceId);
        if (i != null) {
            lastSeen.put(instanceId, now);
        }
        return Optional.ofNullable(i);
    }

    /** Drops the instance; whether it was registered. */
    boolean unregister(long instanceId) {
        Instance i = instances.remove(instanceId);
        if (i == null) {
            return false;
        }
        lastSeen.remove(instanceId);
        ModelKey key = new ModelKey(i.model(), i.worldSize());
        Shared shared = layouts.get(key);
        if (shared != null && --shared.users == 0) {
            layouts.remove(key);
        }
        return true;
    }

    /** The layout in use for {@code model} at {@code worldSize}, if any instance registered it. */
    Optional<ObjectLayout> layout(String model, int worldSize) {
        Shared s = layouts.get(new ModelKey(model, worldSize));
        return s == null ? Optional.empty() : Optional.of(s.layout);
    }

    /** The instances silent for longer than {@code timeoutNanos} (the caller unregisters them). */
    List<Long> silent(long now, long timeoutNanos) {
        List<Long> silent = new ArrayList<>();
        lastSeen.forEach((id, seen) -> {
            if (now - seen > timeoutNanos) {
                silent.add(id);
            }
        });
        return silent;
    }

    /** Every registered instance: id → model_name, world_size, block_size, use_mla ({@code /api/status}). */
    Map<Long, Map<String, Object>> describe() {
        Map<Long, Map<String, Object>> out = new HashMap<>();
        instances.forEach((id, i) -> out.put(id, Map.of("model_name", i.model(), "world_size", i.worldSize(),
                "block_size", i.blockSize(), "use_mla", i.mla())));
        return out;
    }

    int size() {
        return instances.size();
    }
}
