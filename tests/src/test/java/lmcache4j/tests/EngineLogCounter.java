package lmcache4j.tests;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Counts lmcache4j's log records by level instead of printing them, while installed: under injected
 * faults the engine warns thousands of times (dropped puts, corrupt chunks, the remote going away),
 * which would bury the soak's own progress lines. The last warning is kept for the report.
 */
final class EngineLogCounter extends Handler implements AutoCloseable {
    private final Logger logger = Logger.getLogger("lmcache4j");
    private final boolean usedParentHandlers;
    private final Level previousLevel;
    private final Map<Level, LongAdder> counts = new ConcurrentHashMap<>();
    private volatile String lastWarning = "";

    private EngineLogCounter() {
        usedParentHandlers = logger.getUseParentHandlers();
        previousLevel = logger.getLevel();
        logger.setUseParentHandlers(false);
        logger.setLevel(Level.INFO);
        logger.addHandler(this);
    }

    static EngineLogCounter install() {
        return new EngineLogCounter();
    }

    @Override
    public void publish(LogRecord record) {
        counts.computeIfAbsent(record.getLevel(), l -> new LongAdder()).increment();
        if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
            lastWarning = record.getMessage();
        }
    }

    long count(Level level) {
        LongAdder n = counts.get(level);
        return n == null ? 0 : n.sum();
    }

    String lastWarning() {
        return lastWarning;
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        logger.removeHandler(this);
        logger.setUseParentHandlers(usedParentHandlers);
        logger.setLevel(previousLevel);
    }
}
