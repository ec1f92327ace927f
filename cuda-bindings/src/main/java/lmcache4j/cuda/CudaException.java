package lmcache4j.cuda;

/** A CUDA runtime call returned an error. Names the call and carries the decoded error. */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final transient CudaError error;

    public CudaException(String call, CudaError error) {
        super(call + " failed: " + error);
        this.call = call;
        this.error = error;
    }

    protected CudaException(String message) {
        super(message);
        this.call = "";
        this.error = null;
    }

    /** The call that failed, with its arguments, for example {@code "cudaMalloc(1048576)"}. */
    public String call() {
        return call;
    }

    /** The decoded error, or {@code null} for {@link CudaUnavailableException}. */
    public CudaError error() {
        return error;
    }

    /** The {@code cudaError_t} value, or -1 when no call was made. */
    public int code() {
        return error == null ? -1 : error.code();
    }
}
