package lmcache4j.engine.lookup;

/** A lookup-service message that does not follow LMCache's layout; says what was expected where. */
public final class MalformedLookupMessageException extends Exception {
    public MalformedLookupMessageException(String message) {
        super(message);
    }
}
