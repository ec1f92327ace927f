package lmcache4j.engine.remote;

import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;

/**
 * What the remote tier has seen of its store, from the outcomes of its own puts, gets, lookups
 * and health pings (not from the stand-in blackhole while one is in place). A get that finds
 * nothing is a success: the store answered.
 *
 * @param state               see {@link State}
 * @param stateFor            how long the store has been in {@code state}: for {@code DEGRADED} and
 *                            {@code UNREACHABLE}, since the first failure of the current run of
 *                            failures; for {@code HEALTHY}, since the last failure (or the tier's start)
 * @param firstFailure        when an operation first failed, if one ever did
 * @param lastSuccess         when an operation last succeeded, if one ever did
 * @param consecutiveFailures operations that failed since the last success
 * @param failures            operations that failed in all
 * @param successes           operations that succeeded in all
 * @param lastError           the last failure's reason in one line ({@code connection refused},
 *                            {@code timed out after 5.0 s}, ...), empty if none
 */
public record RemoteHealth(State state, Duration stateFor, Optional<Instant> firstFailure, Optional<Instant> lastSuccess,
                           long consecutiveFailures, long failures, long successes, String lastError) {

    /** A store's state, from its recent operations. */
    public enum State {
        /** The last operation succeeded (earlier failures are counted in {@code failures}). */
        HEALTHY,
        /** The last operations failed, fewer than {@link RemoteHealth#UNREACHABLE_AFTER} in a row. */
        DEGRADED,
        /**
         * {@link RemoteHealth#UNREACHABLE_AFTER} or more operations in a row failed, or the health
         * ping failed and a blackhole stands in.
         */
        UNREACHABLE
    }

    /** Consecutive failed operations after which the store counts as unreachable. */
    public static final int UNREACHABLE_AFTER = 3;

    /** Whether any operation ever succeeded against the store. */
    public boolean everSucceeded() {
        return successes > 0;
    }

    /**
     * One phrase for a report: {@code healthy}, {@code degraded for 1.2 s (timed out after 5.0 s)},
     * {@code unreachable for 12.3 s (connection refused)}; a store that never answered says so.
     */
    public String describe() {
        return switch (state) {
            case HEALTHY -> failures == 0 ? "healthy"
                    : String.format(Locale.ROOT, "healthy for %.1f s (%,d operations failed earlier, last: %s)",
                    seconds(stateFor), failures, lastError);
            case DEGRADED, UNREACHABLE -> String.format(Locale.ROOT, "%s for %.1f s (%s)%s",
                    state.name().toLowerCase(Locale.ROOT), seconds(stateFor), lastError,
                    everSucceeded() ? "" : ", never answered");
        };
    }

    private static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }
}
