package lmcache4j.engine;

/** An operation was asked of an engine after {@link LMCacheEngine#close()}. */
public final class EngineClosedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public EngineClosedException(String operation) {
        super(operation + " refused: the engine is closed");
    }
}
