package lmcache4j.engine.p2p;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import lmcache4j.engine.key.CacheKey;

/**
 * Which peer a recent lookup said holds a chunk, so that the retrieve after a lookup fetches without
 * asking the controller again. Bounded (least recently used go first) and short-lived: a hint past
 * its age is asked again, since peers evict.
 */
final class PeerHints {
    private record Hint(String peerInitUrl, long expiresNanos) {
    }

    private final int capacity;
    private final long ttlNanos;
    private final LinkedHashMap<CacheKey, Hint> hints;

    PeerHints(int capacity, long ttlNanos) {
        this.capacity = capacity;
        this.ttlNanos = ttlNanos;
        this.hints = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<CacheKey, Hint> eldest) {
                return size() > PeerHints.this.capacity;
            }
        };
    }

    synchronized void put(CacheKey key, String peerInitUrl) {
        hints.put(key, new Hint(peerInitUrl, System.nanoTime() + ttlNanos));
    }

    synchronized Optional<String> get(CacheKey key) {
        Hint h = hints.get(key);
        if (h == null) {
            return Optional.empty();
        }
        if (System.nanoTime() - h.expiresNanos() > 0) {
            hints.remove(key);
            return Optional.empty();
        }
        return Optional.of(h.peerInitUrl());
    }

    synchronized void forget(CacheKey key) {
        hints.remove(key);
    }

    synchronized void clear() {
        hints.clear();
    }
}
