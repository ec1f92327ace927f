package lmcache4j.engine.storage.disk;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * What a class logs through {@link System.Logger} while a test runs (the default backend is
 * java.util.logging; every level down to DEBUG is recorded). Close it to detach.
 */
final class CapturedLog implements AutoCloseable {
    private final Logger logger;
    private final Level previousLevel;
    private final List<LogRecord> records = new ArrayList<>();
    private final SimpleFormatter formatter = new SimpleFormatter();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            synchronized (records) {
                records.add(record);
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    private CapturedLog(Class<?> source) {
        logger = Logger.getLogger(source.getName());
        previousLevel = logger.getLevel();
        logger.setLevel(Level.ALL);
        handler.setLevel(Level.ALL);
        logger.addHandler(handler);
    }

    /** Starts recording what {@code source} logs. */
    static CapturedLog of(Class<?> source) {
        return new CapturedLog(source);
    }

    /** The messages logged at {@code level} so far, parameters filled in. */
    List<String> at(System.Logger.Level level) {
        Level julLevel = switch (level) {
            case ALL, TRACE -> Level.FINER;
            case DEBUG -> Level.FINE;
            case INFO -> Level.INFO;
            case WARNING -> Level.WARNING;
            case ERROR, OFF -> Level.SEVERE;
        };
        synchronized (records) {
            return records.stream().filter(r -> r.getLevel().equals(julLevel)).map(formatter::formatMessage).toList();
        }
    }

    /** Forgets what was recorded so far. */
    void reset() {
        synchronized (records) {
            records.clear();
        }
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
        logger.setLevel(previousLevel);
    }
}
