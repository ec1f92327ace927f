package lmcache4j.engine.security;

import java.text.MessageFormat;
import java.util.List;
import java.util.ResourceBundle;
import java.util.concurrent.CopyOnWriteArrayList;

/** A logger that keeps what it is told, every level enabled: what the gate logs, as a test reads it. */
final class RecordingLogger implements System.Logger {
    /** One logged line. */
    record Line(Level level, String text) {
    }

    private final List<Line> lines = new CopyOnWriteArrayList<>();

    /** The lines logged at {@code level}, oldest first. */
    List<String> at(Level level) {
        return lines.stream().filter(l -> l.level() == level).map(Line::text).toList();
    }

    @Override
    public String getName() {
        return "recording";
    }

    @Override
    public boolean isLoggable(Level level) {
        return true;
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
        lines.add(new Line(level, msg));
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String format, Object... params) {
        lines.add(new Line(level, params == null || params.length == 0 ? format : MessageFormat.format(format, params)));
    }
}
