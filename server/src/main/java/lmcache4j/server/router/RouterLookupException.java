package lmcache4j.server.router;

/** A {@link PrefixSource} could not answer (the controller is down, slow, or answered nonsense). */
public final class RouterLookupException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RouterLookupException(String message, Throwable cause) {
        super(message, cause);
    }

    public RouterLookupException(String message) {
        super(message);
    }
}
