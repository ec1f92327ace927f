package lmcache4j.engine.remote;

/**
 * A {@code remote_url} that names no store lmcache4j can open: malformed, without a port, or of a
 * scheme this build does not serve. The message says what is wrong and never repeats credentials.
 */
public final class BadRemoteUrlException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    BadRemoteUrlException(String message, Throwable cause) {
        super(message, cause);
    }
}
