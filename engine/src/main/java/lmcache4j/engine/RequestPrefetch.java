package lmcache4j.engine;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;

/**
 * What one request's prefetch holds until its retrieve consumes it (LMCache's {@code EventManager}
 * entry: registered at lookup, popped at retrieve): the objects it made ready, one reference each,
 * by key. Ends exactly once, by {@link #release}: consumed by the retrieve, cancelled, timed out,
 * or the engine closing. Objects that arrive after that are released at once, so a prefetch still
 * loading when its request goes away leaks nothing.
 */
final class RequestPrefetch {
    private final Map<CacheKey, MemoryObj> held = new HashMap<>();
    private final CompletableFuture<Integer> ready;
    private boolean released;
    /** The timer that expires this prefetch; cancelled when it ends otherwise, so no timer outlives it. */
    private Future<?> expiry;

    RequestPrefetch() {
        this.ready = new CompletableFuture<>();
    }

    /** Completes with the number of leading tokens made ready, once every load has answered. */
    CompletableFuture<Integer> ready() {
        return ready;
    }

    /** Takes over one reference to each of {@code objects} (keyed by {@code keys}); released at once if the request is gone. */
    synchronized void hold(List<CacheKey> keys, List<MemoryObj> objects) {
        for (int i = 0; i < keys.size(); i++) {
            MemoryObj obj = objects.get(i);
            if (released || held.putIfAbsent(keys.get(i), obj) != null) {
                obj.release(); // the request is gone, or a repeated key already has its object
            }
        }
    }

    /** The held object of {@code key}, whose reference passes to the caller; empty when none is held. */
    synchronized Optional<MemoryObj> take(CacheKey key) {
        return Optional.ofNullable(held.remove(key));
    }

    /** How many objects are held now. */
    synchronized int heldCount() {
        return held.size();
    }

    /** Sets the timer to cancel when the prefetch ends (at once if it has ended). */
    synchronized void expiresWith(Future<?> timer) {
        expiry = timer;
        if (released) {
            timer.cancel(false);
        }
    }

    /** Drops every reference still held; later arrivals are dropped as they come. */
    synchronized void release() {
        released = true;
        if (expiry != null) {
            expiry.cancel(false);
        }
        held.values().forEach(MemoryObj::release);
        held.clear();
    }
}
