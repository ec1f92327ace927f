package lmcache4j.server.lm;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One log line per interval for a repeating event, saying how many were not logged in between:
 * an accept loop that fails thousands of times a second (file descriptors exhausted) must not
 * fill the disk with the same line. Logging never throws: a logger that fails (formatting a time
 * stamp loads a file, and an accept loop logs exactly when files have run out) counts the line as
 * not logged.
 */
final class RateLimitedLog {
    private final Logger log;
    private final Level level;
    private final long intervalNanos;
    private final AtomicLong suppressed = new AtomicLong();
    private final AtomicLong nextNanos = new AtomicLong(Long.MIN_VALUE);

    RateLimitedLog(Logger log, Level level, long intervalMillis) {
        this.log = log;
        this.level = level;
        this.intervalNanos = intervalMillis * 1_000_000L;
    }

    /** Logs {@code message} unless a line was logged less than the interval ago (then counts it). */
    void log(String message) {
        long now = System.nanoTime();
        long next = nextNanos.get();
        if ((next == Long.MIN_VALUE || now - next >= 0) && nextNanos.compareAndSet(next, now + intervalNanos)) {
            long n = suppressed.getAndSet(0);
            try {
                log.log(level, n == 0 ? message : message + " (" + n + " more like it not logged)");
            } catch (Throwable e) { // the logger itself failed (it may need a file, and files ran out): never the caller's problem
                suppressed.addAndGet(n + 1);
            }
        } else {
            suppressed.incrementAndGet();
        }
    }
}
