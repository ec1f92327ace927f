package lmcache4j.engine.connector;

/**
 * A stored object whose format, shape or dtype is not what a copy into this KV cache needs: thrown
 * before any byte is copied, so the engine can answer a miss from the first such chunk on.
 */
public final class ChunkMismatchException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public ChunkMismatchException(String message) {
        super(message);
    }
}
