package lmcache4j.engine.controller.message;

/**
 * A controller frame that is not a valid LMCache message: bad msgpack, a missing or mistyped
 * field, a declared length the frame cannot hold, trailing bytes. The socket that read it counts
 * it, drops it and keeps serving.
 */
public class MalformedMessageException extends Exception {
    private static final long serialVersionUID = 1L;

    /** @param message what was wrong with the frame, and where */
    public MalformedMessageException(String message) {
        super(message);
    }

    /** @param message what was wrong with the frame; @param cause the decoder's own error */
    public MalformedMessageException(String message, Throwable cause) {
        super(message, cause);
    }
}
