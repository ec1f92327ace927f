package lmcache4j.server.controller.index;

/** A message would grow the index past one of its hard limits (holders, locations, slots); it is refused. */
public final class IndexLimitException extends RuntimeException {
    IndexLimitException(String message) {
        super(message);
    }
}
