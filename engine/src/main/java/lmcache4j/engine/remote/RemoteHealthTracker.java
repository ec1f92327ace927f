package lmcache4j.engine.remote;

import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * Keeps {@link RemoteHealth}: told of every operation the remote tier ran against its store and
 * how it ended. Thread-safe (operations complete on connector threads).
 */
final class RemoteHealthTracker {
    private final InstantSource clock;
    private final Instant started;
    private Instant firstFailure;
    private Instant lastSuccess;
    private Instant streakStarted;
    private Instant lastFailureEnded;
    private long consecutiveFailures;
    private long failures;
    private long successes;
    private String lastError = "";
    private boolean pingFailing;

    RemoteHealthTracker(InstantSource clock) {
        this.clock = clock;
        this.started = clock.instant();
    }

    /** The store answered an operation (a get that found nothing included). */
    synchronized void succeeded() {
        Instant now = clock.instant();
        lastSuccess = now;
        successes++;
        if (consecutiveFailures > 0) {
            lastFailureEnded = now;
        }
        consecutiveFailures = 0;
        streakStarted = null;
    }

    /** An operation failed: an error from the connector, or no answer within the deadline. */
    synchronized void failed(Throwable why) {
        Instant now = clock.instant();
        if (firstFailure == null) {
            firstFailure = now;
        }
        if (streakStarted == null) {
            streakStarted = now;
        }
        consecutiveFailures++;
        failures++;
        lastError = reason(why);
    }

    /** The health monitor's verdict: while pings fail a blackhole stands in, so the store is unreachable. */
    synchronized void pinged(boolean answered, Throwable why) {
        if (answered) {
            pingFailing = false;
            succeeded();
        } else {
            pingFailing = true;
            failed(why);
        }
    }

    synchronized RemoteHealth snapshot() {
        Instant now = clock.instant();
        RemoteHealth.State state;
        Instant since;
        if (consecutiveFailures == 0 && !pingFailing) {
            state = RemoteHealth.State.HEALTHY;
            since = lastFailureEnded != null ? lastFailureEnded : started;
        } else {
            state = pingFailing || consecutiveFailures >= RemoteHealth.UNREACHABLE_AFTER ? RemoteHealth.State.UNREACHABLE
                    : RemoteHealth.State.DEGRADED;
            since = streakStarted != null ? streakStarted : now;
        }
        return new RemoteHealth(state, Duration.between(since, now), Optional.ofNullable(firstFailure),
                Optional.ofNullable(lastSuccess), consecutiveFailures, failures, successes, lastError);
    }

    /**
     * A failure's reason in one line: the innermost cause's message ({@code Connection refused},
     * not the wrappers around it); a file system error says what and where.
     */
    static String reason(Throwable why) {
        Throwable t = why;
        while ((t instanceof CompletionException || t instanceof ExecutionException || t instanceof UncheckedIOException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof TimeoutException) {
            return t.getMessage() != null ? t.getMessage() : "timed out";
        }
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String message;
        if (t instanceof FileSystemException fs) {
            message = (fs.getReason() != null ? fs.getReason() : words(t)) + (fs.getFile() != null ? ": " + fs.getFile() : "");
        } else if (t.getMessage() == null || t.getMessage().isBlank()) {
            message = words(t);
        } else {
            message = t.getMessage().strip();
        }
        return message.replaceAll("\\s+", " ");
    }

    /** {@code AccessDeniedException} as {@code access denied}. */
    private static String words(Throwable t) {
        String name = t.getClass().getSimpleName().replaceFirst("(Exception|Error)$", "");
        return name.replaceAll("([a-z])([A-Z])", "$1 $2").toLowerCase(Locale.ROOT);
    }
}
