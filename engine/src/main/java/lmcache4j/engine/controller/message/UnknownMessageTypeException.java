package lmcache4j.engine.controller.message;

/**
 * A well-formed frame whose {@code "type"} names no message lmcache4j knows (a newer LMCache, or
 * a stray sender). Distinct from {@link MalformedMessageException} so that sockets count the two
 * separately; catch this one first.
 */
public final class UnknownMessageTypeException extends MalformedMessageException {
    private static final long serialVersionUID = 1L;
    private final String typeName;

    /** @param typeName the {@code "type"} value the frame carried */
    public UnknownMessageTypeException(String typeName) {
        super("unknown controller message type \"" + typeName + "\"");
        this.typeName = typeName;
    }

    /** The {@code "type"} value the frame carried. */
    public String typeName() {
        return typeName;
    }
}
