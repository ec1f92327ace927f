package lmcache4j.engine.config.internal;

/**
 * A value that cannot be converted to, or is not valid for, its field. The message says what is
 * valid instead; the loader adds the key, the value and the source.
 */
public final class BadValueException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public BadValueException(String whatIsValid) {
        super(whatIsValid, null, false, false);
    }
}
