package lmcache4j.bench.trace;

/** A trace file that is not in Mooncake's format; the message names the line and what is wrong. */
public final class MalformedTraceException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public MalformedTraceException(String message) {
        super(message);
    }
}
