package lmcache4j.engine.storage;

/**
 * A retrieve waited {@code blocking_timeout_secs} for memory that never came free: every cached
 * object was pinned or in use. LMCache busy-loops forever here; lmcache4j gives up with this error.
 */
public final class MemoryWaitTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public MemoryWaitTimeoutException(String message) {
        super(message);
    }
}
