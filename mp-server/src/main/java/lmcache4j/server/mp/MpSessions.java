package lmcache4j.server.mp;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Per-request state, keyed by LMCache's {@code request_id}: what the session's last key said, the
 * chain of chunk hashes computed for it so far, and the prefetch job of its last lookup. LMCache
 * drops a session at {@code end_session} or after {@value #DEFAULT_TTL_SECONDS} s unused, and a
 * prefetch job when its count has been read; a job nobody reads lives as long as its session here.
 *
 * <p>Bounded: at most {@code maxSessions} at once, and at most {@code maxWeight} in all (a
 * session's weight is what it holds: its tokens); the least recently used make room (their
 * clients have then lost nothing they could not ask for again). Confined to the server's loop
 * thread.
 *
 * @param <S> what a session holds (the server's session type)
 */
final class MpSessions<S> {
    /** LMCache's {@code SessionManager.DEFAULT_SESSION_TTL}. */
    static final long DEFAULT_TTL_SECONDS = 600;

    private final int maxSessions;
    private final long maxWeight;
    private final long ttlNanos;
    private long totalWeight;
    /** Told of every session dropped without {@link #remove}: evicted for room, or expired. */
    private final Consumer<S> onDrop;
    private final LinkedHashMap<String, Entry<S>> sessions = new LinkedHashMap<>(16, 0.75f, true);
    private long evicted;
    private long expired;

    private static final class Entry<S> {
        final S value;
        long lastUsedNanos;
        long weight;

        Entry(S value, long now) {
            this.value = value;
            this.lastUsedNanos = now;
        }
    }

    MpSessions(int maxSessions, long maxWeight, long ttlNanos, Consumer<S> onDrop) {
        if (maxSessions < 1 || maxWeight < 1 || ttlNanos <= 0) {
            throw new IllegalArgumentException("sessions need a positive cap and time to live, got " + maxSessions + ", "
                    + ttlNanos + " ns");
        }
        this.maxSessions = maxSessions;
        this.maxWeight = maxWeight;
        this.ttlNanos = ttlNanos;
        this.onDrop = onDrop;
    }

    /** The session of {@code requestId}, made with {@code create} when there is none. */
    S getOrCreate(String requestId, long now, Function<String, S> create) {
        Entry<S> e = sessions.get(requestId);
        if (e == null) {
            if (sessions.size() >= maxSessions) {
                Iterator<Map.Entry<String, Entry<S>>> oldest = sessions.entrySet().iterator();
                Entry<S> dropped = oldest.next().getValue();
                oldest.remove();
                totalWeight -= dropped.weight;
                evicted++;
                onDrop.accept(dropped.value);
            }
            e = new Entry<>(create.apply(requestId), now);
            sessions.put(requestId, e);
        }
        e.lastUsedNanos = now;
        return e.value;
    }

    /**
     * Sets what {@code requestId}'s session weighs now, then drops the least recently used other
     * sessions while the total is over the cap. False when this session alone is over it (it is
     * dropped too: the caller must not keep using it).
     */
    boolean weigh(String requestId, long weight) {
        Entry<S> e = sessions.get(requestId);
        if (e == null) {
            throw new IllegalStateException("no session " + requestId);
        }
        totalWeight += weight - e.weight;
        e.weight = weight;
        Iterator<Map.Entry<String, Entry<S>>> oldest = sessions.entrySet().iterator();
        while (totalWeight > maxWeight && oldest.hasNext()) {
            Map.Entry<String, Entry<S>> o = oldest.next();
            oldest.remove();
            totalWeight -= o.getValue().weight;
            evicted++;
            onDrop.accept(o.getValue().value);
            if (o.getValue() == e) {
                return false;
            }
        }
        return true;
    }

    long totalWeight() {
        return totalWeight;
    }

    /** The session, if there is one; touches it. */
    Optional<S> get(String requestId, long now) {
        Entry<S> e = sessions.get(requestId);
        if (e == null) {
            return Optional.empty();
        }
        e.lastUsedNanos = now;
        return Optional.of(e.value);
    }

    /** Ends the session; its value, if it had one. */
    Optional<S> remove(String requestId) {
        Entry<S> e = sessions.remove(requestId);
        if (e == null) {
            return Optional.empty();
        }
        totalWeight -= e.weight;
        return Optional.of(e.value);
    }

    /** Drops the sessions unused for longer than the time to live. */
    void sweep(long now) {
        Iterator<Entry<S>> it = sessions.values().iterator();
        while (it.hasNext()) { // access order: the least recently used come first
            Entry<S> e = it.next();
            if (now - e.lastUsedNanos <= ttlNanos) {
                break;
            }
            it.remove();
            totalWeight -= e.weight;
            expired++;
            onDrop.accept(e.value);
        }
    }

    int size() {
        return sessions.size();
    }

    long evicted() {
        return evicted;
    }

    long expired() {
        return expired;
    }

    void clear() {
        sessions.clear();
        totalWeight = 0;
    }
}
