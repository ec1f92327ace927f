package lmcache4j.engine.security;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * The warning a watched server socket gives when it refuses a peer without the deployment secret:
 * who, where and why, said at most once a {@linkplain #INTERVAL minute}, because such a peer
 * retries about ten times a second and would otherwise fill the log. Used by the gate's one thread.
 */
final class RefusalWarning {
    /** At most one warning this often; the count in each says how many were refused in between. */
    static final Duration INTERVAL = Duration.ofSeconds(60);

    private final System.Logger log;
    private final LongSupplier nanoClock;
    private long nextWarning;

    /** Warns on {@code log}, reading the time from {@code nanoClock} ({@link System#nanoTime} but in tests). */
    RefusalWarning(System.Logger log, LongSupplier nanoClock) {
        this.log = log;
        this.nanoClock = nanoClock;
        this.nextWarning = nanoClock.getAsLong(); // the first refusal is said at once
    }

    /**
     * A connection from {@code peer} to {@code socket} was refused because {@code why}, the
     * {@code refusedSoFar}-th refusal of the gate: logged unless a warning was logged less than a
     * minute ago.
     */
    void refused(String peer, String socket, String why, long refusedSoFar) {
        long now = nanoClock.getAsLong();
        if (now - nextWarning < 0) { // a difference, not a comparison: nanoTime may wrap
            return;
        }
        nextWarning = now + INTERVAL.toNanos();
        log.log(Level.WARNING, "refused a connection from " + peer + " to " + socket + ": " + why + " (engines: "
                + "deployment_secret_file; demo: --secret-file; the same file as this process's). " + refusedSoFar
                + " handshakes refused so far; this is said at most once a minute");
    }
}
