package lmcache4j.engine.controller;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.storage.ResidencyListener;

/**
 * What the controller worker may do to its engine: the engine implements it, so the worker knows
 * no engine class and the engine no socket.
 */
public interface WorkerControls {
    /** Tells {@code listener} of every admit and evict in every tier. */
    void setResidencyListener(ResidencyListener listener);

    /** For each tier that can list its keys, the keys it holds now. */
    Map<String, List<CacheKey>> residentKeys();

    /** The tier names, in search order. */
    List<String> tierNames();

    /** Removes every evictable chunk of tier {@code location}; tokens removed, or empty when there is no such tier. */
    OptionalLong clear(String location);

    /** Pins the cached prefix of {@code tokens} in tier {@code location}; tokens pinned, or empty when there is no such tier. */
    OptionalLong pin(String location, int[] tokens);

    /** Starts loading the stored prefix of {@code tokens} from disk into the CPU tier; completes with the tokens there. */
    CompletableFuture<Integer> prefetchToCpu(int[] tokens);

    /** 0 when healthy (LMCache's {@code health()}). */
    int health();

    /**
     * The control-plane key ({@link ControllerKeys}) of the chunk with {@code digest}; empty when this
     * engine has not keyed it (LMCache's keys come from a prompt's tokens).
     */
    OptionalLong controllerKey(ChunkHash digest);
}
