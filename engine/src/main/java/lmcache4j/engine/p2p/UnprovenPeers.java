package lmcache4j.engine.p2p;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Peers that could not prove they hold the deployment's P2P token, set aside for a while: their
 * claims (the controller's index names whoever registered, and an {@code --insecure} controller lets
 * anyone register) no longer count in lookups, so one forged claim costs a victim one failed
 * handshake, not one per request. Bounded: the oldest entries go first.
 */
final class UnprovenPeers {
    private final int capacity;
    private final long ttlNanos;
    private final LinkedHashMap<String, Long> until;

    UnprovenPeers(int capacity, long ttlNanos) {
        this.capacity = capacity;
        this.ttlNanos = ttlNanos;
        this.until = new LinkedHashMap<>(16, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
                return size() > UnprovenPeers.this.capacity;
            }
        };
    }

    /** Sets {@code peerInitUrl} aside for the time-to-live; true when it was not set aside already. */
    synchronized boolean add(String peerInitUrl) {
        return until.put(peerInitUrl, System.nanoTime() + ttlNanos) == null;
    }

    synchronized boolean contains(String peerInitUrl) {
        Long end = until.get(peerInitUrl);
        if (end == null) {
            return false;
        }
        if (System.nanoTime() - end > 0) {
            until.remove(peerInitUrl);
            return false;
        }
        return true;
    }

    synchronized void clear() {
        until.clear();
    }
}
