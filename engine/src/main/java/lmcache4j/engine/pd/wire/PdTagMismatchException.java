package lmcache4j.engine.pd.wire;

/**
 * A frame whose tag is not the one its session key gives for its bytes: altered in flight, or sent
 * by someone without the session. Nothing of it may be used.
 */
public final class PdTagMismatchException extends PdProtocolException {
    private static final long serialVersionUID = 1L;

    public PdTagMismatchException(String message) {
        super(message);
    }
}
