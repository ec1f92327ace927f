package lmcache4j.server.mp;

import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Predicate;

import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * The retrieves workers prepared and have not committed yet, by instance, request and object keys,
 * holding at most {@code maxKeys} keys in all: a client that prepares retrieves of every sub-range
 * of a long prompt and never commits them cannot make the server hold more (a prepare past the
 * budget is answered as a miss, and the worker recomputes). The request id is part of the key:
 * two requests of one instance for the same chunks each hold their own lookup's locks, and each
 * commit releases its own. Loop thread only.
 */
final class MpPendingReads {
    private record Pending(long instanceId, String requestId, List<MpObjectKey> keys) {
    }

    private final long maxKeys;
    private final Map<Pending, Long> sinceNanos = new HashMap<>();
    private long heldKeys;

    MpPendingReads(long maxKeys) {
        if (maxKeys < 1) {
            throw new IllegalArgumentException("the pending reads' key budget must be positive, got " + maxKeys);
        }
        this.maxKeys = maxKeys;
    }

    /** Records a prepared retrieve (again: its time is renewed); false, recording nothing, past the budget. */
    boolean add(long instanceId, String requestId, List<MpObjectKey> keys, long now) {
        Pending p = new Pending(instanceId, requestId, keys);
        if (sinceNanos.containsKey(p)) {
            sinceNanos.put(p, now);
            return true;
        }
        if (heldKeys + keys.size() > maxKeys) {
            return false;
        }
        sinceNanos.put(p, now);
        heldKeys += keys.size();
        return true;
    }

    /** Forgets the prepared retrieve of these keys by this request; whether there was one. */
    boolean remove(long instanceId, String requestId, List<MpObjectKey> keys) {
        Pending p = new Pending(instanceId, requestId, keys);
        if (sinceNanos.remove(p) == null) {
            return false;
        }
        heldKeys -= keys.size();
        return true;
    }

    /** Forgets every prepared retrieve of {@code instanceId}, handing each one's keys to {@code released}. */
    void removeInstance(long instanceId, Consumer<List<MpObjectKey>> released) {
        removeIf(p -> p.instanceId() == instanceId, released);
    }

    /** Forgets the prepared retrieves older than {@code ttlNanos} (their locks lapsed in the store at that age). */
    void expire(long now, long ttlNanos) {
        removeIf(p -> now - sinceNanos.get(p) > ttlNanos, keys -> { });
    }

    /** Keys held now. */
    long heldKeys() {
        return heldKeys;
    }

    private void removeIf(Predicate<Pending> gone, Consumer<List<MpObjectKey>> released) {
        Iterator<Pending> it = sinceNanos.keySet().iterator();
        while (it.hasNext()) {
            Pending p = it.next();
            if (gone.test(p)) {
                it.remove();
                heldKeys -= p.keys().size();
                released.accept(p.keys());
            }
        }
    }
}
