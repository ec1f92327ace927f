package lmcache4j.engine.zmq;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The messages a class logs at one level while open (System.Logger's default backend, java.util.logging). */
final class LogCapture extends Handler implements AutoCloseable {
    private final Logger logger;
    private final Level level;
    private final List<String> messages = new CopyOnWriteArrayList<>();

    private LogCapture(Class<?> source, Level level) {
        this.logger = Logger.getLogger(source.getName());
        this.level = level;
        logger.addHandler(this);
    }

    static LogCapture of(Class<?> source, Level level) {
        return new LogCapture(source, level);
    }

    /** The messages so far, in order. */
    List<String> messages() {
        return messages;
    }

    @Override
    public void publish(LogRecord record) {
        if (record.getLevel() == level) {
            messages.add(record.getMessage());
        }
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        logger.removeHandler(this);
    }
}
