package lmcache4j.server.controller;

import java.util.function.Supplier;

/** Logs a warning at most once per interval (bad frames can arrive by the million); the rest are only counted. */
final class RateLimitedWarning {
    private final System.Logger log;
    private final long intervalNanos;
    private volatile long next = System.nanoTime();

    RateLimitedWarning(System.Logger log, long intervalMillis) {
        this.log = log;
        this.intervalNanos = intervalMillis * 1_000_000L;
    }

    void warn(Supplier<String> message) {
        long now = System.nanoTime();
        if (now - next >= 0) {
            next = now + intervalNanos;
            log.log(System.Logger.Level.WARNING, message.get() + " (further ones are counted in /metrics, logged at most "
                    + "every " + intervalNanos / 1_000_000_000L + " s)");
        }
    }
}
