package lmcache4j.server.lm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * What one {@link LmCacheServer} lets its clients hold: connections, entries and time. Every
 * bound exists because one misbehaving client could otherwise take the server down for all
 * (file descriptors, heap, the payload pool, or a thread parked forever on a stalled socket).
 *
 * @param maxConnections       connections served at once; at the limit the longest-idle connection
 *                             (idle at least {@code reclaimIdleAfter}) is closed to admit a new one,
 *                             otherwise the new one is closed at once
 * @param maxEntries           entries stored at once; the least recently used go first beyond it
 * @param idleTimeout          a connection with no request for this long is closed (LMCache's own
 *                             client keeps one connection for its lifetime, hence the long default)
 * @param stallTimeout         a frame half received, a reply half sent, or a connection that has not
 *                             authenticated, with no byte moving for this long, is closed
 * @param reclaimIdleAfter     how long a connection must have been idle before a new client at the
 *                             connection limit may take its place
 * @param authFailureDelay     how long a wrong token waits before its FAIL (then the server closes)
 * @param authFailuresPerSecond wrong tokens answered per second, server-wide; more wait their turn
 */
public record LmServerLimits(int maxConnections, long maxEntries, Duration idleTimeout, Duration stallTimeout,
                             Duration reclaimIdleAfter, Duration authFailureDelay, double authFailuresPerSecond) {

    /** The heap one entry costs at most (key string, metadata, map node, page list), for the default bound. */
    static final long ENTRY_HEAP_BYTES = 1024;

    public LmServerLimits {
        if (maxConnections < 1) {
            throw new IllegalArgumentException("maxConnections must be >= 1, was " + maxConnections);
        }
        if (maxEntries < 1) {
            throw new IllegalArgumentException("maxEntries must be >= 1, was " + maxEntries);
        }
        requirePositive("idleTimeout", idleTimeout);
        requirePositive("stallTimeout", stallTimeout);
        Objects.requireNonNull(reclaimIdleAfter, "reclaimIdleAfter");
        Objects.requireNonNull(authFailureDelay, "authFailureDelay");
        if (reclaimIdleAfter.isNegative() || authFailureDelay.isNegative()) {
            throw new IllegalArgumentException("reclaimIdleAfter and authFailureDelay must be >= 0");
        }
        if (!(authFailuresPerSecond > 0) || Double.isInfinite(authFailuresPerSecond)) {
            throw new IllegalArgumentException("authFailuresPerSecond must be a positive number, was "
                    + authFailuresPerSecond);
        }
    }

    private static void requirePositive(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, was " + d);
        }
    }

    /**
     * The defaults for this process: connections up to half the open-file limit (at most 4096),
     * entries up to what a quarter of the heap holds, a 1-hour idle timeout, a 30 s stall timeout,
     * idle connections reclaimable at the limit after 2 s, and wrong tokens answered after 1 s at
     * no more than 10 per second.
     */
    public static LmServerLimits defaults() {
        long fds = openFileLimit();
        int connections = (int) Math.max(16, Math.min(4096, fds / 2));
        long entries = Math.max(1024, Runtime.getRuntime().maxMemory() / 4 / ENTRY_HEAP_BYTES);
        return new LmServerLimits(connections, entries, Duration.ofHours(1), Duration.ofSeconds(30),
                Duration.ofSeconds(2), Duration.ofSeconds(1), 10);
    }

    public LmServerLimits withMaxConnections(int n) {
        return new LmServerLimits(n, maxEntries, idleTimeout, stallTimeout, reclaimIdleAfter, authFailureDelay,
                authFailuresPerSecond);
    }

    public LmServerLimits withMaxEntries(long n) {
        return new LmServerLimits(maxConnections, n, idleTimeout, stallTimeout, reclaimIdleAfter, authFailureDelay,
                authFailuresPerSecond);
    }

    public LmServerLimits withIdleTimeout(Duration d) {
        return new LmServerLimits(maxConnections, maxEntries, d, stallTimeout, reclaimIdleAfter, authFailureDelay,
                authFailuresPerSecond);
    }

    public LmServerLimits withStallTimeout(Duration d) {
        return new LmServerLimits(maxConnections, maxEntries, idleTimeout, d, reclaimIdleAfter, authFailureDelay,
                authFailuresPerSecond);
    }

    public LmServerLimits withReclaimIdleAfter(Duration d) {
        return new LmServerLimits(maxConnections, maxEntries, idleTimeout, stallTimeout, d, authFailureDelay,
                authFailuresPerSecond);
    }

    public LmServerLimits withAuthFailureDelay(Duration d) {
        return new LmServerLimits(maxConnections, maxEntries, idleTimeout, stallTimeout, reclaimIdleAfter, d,
                authFailuresPerSecond);
    }

    public LmServerLimits withAuthFailuresPerSecond(double rate) {
        return new LmServerLimits(maxConnections, maxEntries, idleTimeout, stallTimeout, reclaimIdleAfter,
                authFailureDelay, rate);
    }

    /** The soft open-file limit of this process ({@code /proc/self/limits}); 1024 where it cannot be read. */
    static long openFileLimit() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
                if (line.startsWith("Max open files")) {
                    String soft = line.substring("Max open files".length()).trim().split("\\s+")[0];
                    return soft.equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(soft);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or an unexpected format: fall through to the common default
        }
        return 1024;
    }
}
