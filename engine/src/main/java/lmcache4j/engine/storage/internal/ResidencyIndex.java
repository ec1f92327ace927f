package lmcache4j.engine.storage.internal;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.Supplier;

import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.ResidencyListener;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.policy.CachePolicy;

/**
 * What a local tier holds, and the bookkeeping every such tier does around it: the entries by key,
 * the {@link CachePolicy} kept in step with them, lookups that pin, unpins, the recency touch for
 * the keys the latest lookup pinned, and eviction of the policy's best unpinned candidate.
 *
 * <p>Every method takes the index's {@link #lock()}, which the tier also holds (it is reentrant)
 * for its own state and for compound steps. The lookups, {@link #pin}, {@link #unpin} and
 * {@link #touch} are whole tier operations; the rest expect the tier to hold the lock around them
 * when they must be atomic with its other state. How an entry is pinned is the tier's ({@code V}
 * may be a {@code MemoryObj} or a file's record).
 *
 * @param <V> what the tier keeps for a key
 */
public final class ResidencyIndex<V> {
    private final TimedLock lock = new TimedLock();
    private final Map<CacheKey, V> entries = new HashMap<>();
    private final CachePolicy<CacheKey> policy;
    private final List<CacheKey> keysInRequest = new ArrayList<>();
    private final Consumer<? super V> pin;
    private final Predicate<? super V> unpin;
    private final Predicate<? super V> evictable;
    private volatile String tierName = "";
    private volatile ResidencyListener listener = ResidencyListener.NONE;

    /**
     * @param policy    the tier's cache policy, told of every put, removal and hit
     * @param pin       pins an entry
     * @param unpin     unpins an entry; false (changing nothing) when it was not pinned
     * @param evictable whether an entry may be evicted now (unpinned, not in use)
     */
    public ResidencyIndex(CachePolicy<CacheKey> policy, Consumer<? super V> pin, Predicate<? super V> unpin,
                          Predicate<? super V> evictable) {
        this.policy = Objects.requireNonNull(policy, "policy");
        this.pin = Objects.requireNonNull(pin, "pin");
        this.unpin = Objects.requireNonNull(unpin, "unpin");
        this.evictable = Objects.requireNonNull(evictable, "evictable");
    }

    /** Tells {@code listener}, as {@code tierName}, of every key that enters or leaves the index from now on. */
    public void setListener(String tierName, ResidencyListener listener) {
        this.tierName = Objects.requireNonNull(tierName, "tierName");
        this.listener = Objects.requireNonNull(listener, "listener");
    }

    /** The lock guarding the index; the tier guards its other state with it too. It counts its waits and holds. */
    public TimedLock lock() {
        return lock;
    }

    private <T> T locked(Supplier<T> body) {
        lock.lock();
        try {
            return body.get();
        } finally {
            lock.unlock();
        }
    }

    private void lockedRun(Runnable body) {
        lock.lock();
        try {
            body.run();
        } finally {
            lock.unlock();
        }
    }

    /** The policy's name. */
    public String policyName() {
        return policy.name();
    }

    /** The entry for {@code key}, or null. */
    public V get(CacheKey key) {
        return locked(() -> entries.get(key));
    }

    public boolean containsKey(CacheKey key) {
        return locked(() -> entries.containsKey(key));
    }

    public int size() {
        return locked(entries::size);
    }

    /** The keys held now, a copy. */
    public List<CacheKey> keys() {
        return locked(() -> List.copyOf(entries.keySet()));
    }

    /** The keys whose entries are evictable now, a copy. */
    public List<CacheKey> evictableKeys() {
        return locked(() -> {
            List<CacheKey> keys = new ArrayList<>();
            entries.forEach((key, v) -> {
                if (evictable.test(v)) {
                    keys.add(key);
                }
            });
            return keys;
        });
    }

    /** Whether {@code key} is held; with {@code pin}, pins it and remembers it for {@link #touch()}. */
    public boolean contains(CacheKey key, boolean pin) {
        return locked(() -> {
            V v = entries.get(key);
            if (v != null && pin) {
                this.pin.accept(v);
                keysInRequest.add(key);
            }
            return v != null;
        });
    }

    /** For each of {@code keys}, whether it is held: one lock acquisition for all of them. */
    public boolean[] containsEach(List<? extends CacheKey> keys) {
        return locked(() -> {
            boolean[] held = new boolean[keys.size()];
            for (int i = 0; i < held.length; i++) {
                held[i] = entries.containsKey(keys.get(i));
            }
            return held;
        });
    }

    /**
     * How many of {@code keys}, from the first, are held (a prefix); with {@code pin} as
     * {@link #contains}. The policy is told of the lookup ({@link CachePolicy#onLookup}).
     */
    public int prefixHits(List<? extends CacheKey> keys, boolean pin) {
        return locked(() -> {
            int held = StorageBackend.leadingHits(keys, key -> contains(key, pin));
            policy.onLookup(keys, held);
            return held;
        });
    }

    /** Pins {@code key}'s entry without remembering it for {@link #touch()}; false if absent. */
    public boolean pin(CacheKey key) {
        return locked(() -> {
            V v = entries.get(key);
            if (v != null) {
                pin.accept(v);
            }
            return v != null;
        });
    }

    /** Unpins {@code key}'s entry; false if absent or not pinned. */
    public boolean unpin(CacheKey key) {
        return locked(() -> {
            V v = entries.get(key);
            return v != null && unpin.test(v);
        });
    }

    /** Unpins each of {@code keys}' entries under one acquisition of the lock; absent or unpinned ones are skipped. */
    public void unpinAll(List<? extends CacheKey> keys) {
        lock.lock();
        try {
            for (CacheKey key : keys) {
                V v = entries.get(key);
                if (v != null) {
                    unpin.test(v);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Recency for the keys the latest lookups pinned, last first so the prefix ends up most recent. */
    public void touch() {
        lockedRun(() -> {
            for (int i = keysInRequest.size() - 1; i >= 0; i--) {
                CacheKey key = keysInRequest.get(i);
                if (entries.containsKey(key)) {
                    policy.onHit(key);
                }
            }
            keysInRequest.clear();
        });
    }

    /** Forgets the keys remembered for {@link #touch()}. */
    public void forgetRequest() {
        lockedRun(keysInRequest::clear);
    }

    /** Holds {@code v} under {@code key} and tells the policy. */
    public void put(CacheKey key, V v) {
        Objects.requireNonNull(v, "v");
        lockedRun(() -> {
            if (entries.put(key, v) == null) {
                listener.admitted(tierName, key);
            }
            policy.onPut(key);
        });
    }

    /** Removes {@code key}'s entry and tells the policy; returns it, or null if absent. */
    public V remove(CacheKey key) {
        return locked(() -> {
            V v = entries.remove(key);
            if (v != null) {
                policy.onRemove(key);
                listener.evicted(tierName, key);
            }
            return v;
        });
    }

    /** Removes {@code key}'s entry only if it is still {@code v}; whether it did. */
    public boolean remove(CacheKey key, V v) {
        return locked(() -> entries.get(key) == v && remove(key) != null);
    }

    /** Removes the policy's best evictable candidate and returns it; null when nothing is evictable. */
    public V evictOne() {
        return locked(() -> {
            List<CacheKey> victims = policy.evictionCandidates(1, k -> evictable.test(entries.get(k)));
            return victims.isEmpty() ? null : remove(victims.getFirst());
        });
    }

    /** Checks that the policy tracks exactly the held keys. */
    public void check() {
        lockedRun(() -> {
            if (policy.size() != entries.size()) {
                throw new IllegalStateException("cache policy tracks " + policy.size() + " keys, cache holds "
                        + entries.size());
            }
        });
    }
}
