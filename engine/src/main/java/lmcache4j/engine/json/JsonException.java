package lmcache4j.engine.json;

/** Text that is not the JSON expected; the message says where and what was expected instead. */
public final class JsonException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    JsonException(String message) {
        super(message, null);
    }
}
