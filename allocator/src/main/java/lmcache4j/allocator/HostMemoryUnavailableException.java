package lmcache4j.allocator;

/**
 * The system refused host memory for an allocator: the mapping, its {@code mlock} (beyond
 * {@code ulimit -l}) or its CUDA pinning. The message names the call, the error and what to change.
 */
public final class HostMemoryUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public HostMemoryUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
