package lmcache4j.bench.internal;

import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Holds the {@code lmcache4j} loggers at WARNING while a benchmark measures (the servers and tiers it
 * starts log their start and each registration at INFO, which would bury the progress lines), and
 * gives them back their level on close.
 */
public final class QuietLogs implements AutoCloseable {
    // A strong reference: java.util.logging keeps loggers weakly, so an unreferenced one could be
    // collected and recreated at its default level in the middle of a run.
    private final Logger logger = Logger.getLogger("lmcache4j");
    private final Level before = logger.getLevel();

    private QuietLogs() {
        logger.setLevel(Level.WARNING);
    }

    /** Warnings and errors only, until {@link #close()}. */
    public static QuietLogs warningsOnly() {
        return new QuietLogs();
    }

    @Override
    public void close() {
        logger.setLevel(before);
    }
}
