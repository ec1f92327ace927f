package lmcache4j.server.mp;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The requests the MP server dropped, counted by reason. LMCache's protocol has no error reply, so
 * a dropped request is answered by silence (the client times out); the log says why, at most once
 * per reason every 5 s so that a flood of bad frames cannot flood the log. Loop thread only.
 */
final class MpDrops {
    private static final System.Logger LOG = System.getLogger(MpDrops.class.getName());
    private static final long LOG_INTERVAL_NANOS = Duration.ofSeconds(5).toNanos();

    private final Map<String, Long> counts = new TreeMap<>();
    private final Map<String, Long> lastLogged = new HashMap<>();

    /** Counts a dropped request; logs {@code detail} (when given) unless this reason was logged in the last 5 s. */
    void drop(String reason, String detail) {
        counts.merge(reason, 1L, Long::sum);
        long now = System.nanoTime();
        Long last = lastLogged.get(reason);
        if (detail != null && (last == null || now - last > LOG_INTERVAL_NANOS)) {
            lastLogged.put(reason, now);
            LOG.log(System.Logger.Level.WARNING, "MP server: dropped a request (" + reason + "): " + detail
                    + " (LMCache's protocol has no error reply; the client times out)");
        }
    }

    /** Drops by reason, sorted by reason (the live map: read it on the loop thread). */
    Map<String, Long> counts() {
        return counts;
    }
}
