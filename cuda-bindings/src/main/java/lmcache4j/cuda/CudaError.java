package lmcache4j.cuda;

/**
 * A CUDA runtime error code with the runtime's own name and description of it.
 *
 * @param code    the {@code cudaError_t} value, for example 35
 * @param name    its enumerator, for example {@code cudaErrorInsufficientDriver}
 * @param message the runtime's text, for example "CUDA driver version is insufficient for CUDA
 *                runtime version"
 */
public record CudaError(int code, String name, String message) {
    /** {@code cudaSuccess}. */
    public static final int SUCCESS = 0;
    /** {@code cudaErrorInvalidValue}. */
    public static final int INVALID_VALUE = 1;
    /** {@code cudaErrorMemoryAllocation}. */
    public static final int MEMORY_ALLOCATION = 2;
    /** {@code cudaErrorInsufficientDriver}: no driver, or one older than the runtime. */
    public static final int INSUFFICIENT_DRIVER = 35;
    /** {@code cudaErrorNoDevice}. */
    public static final int NO_DEVICE = 100;
    /** {@code cudaErrorHostMemoryAlreadyRegistered}. */
    public static final int HOST_MEMORY_ALREADY_REGISTERED = 712;
    /** {@code cudaErrorHostMemoryNotRegistered}. */
    public static final int HOST_MEMORY_NOT_REGISTERED = 713;

    @Override
    public String toString() {
        return name + " (" + code + "): " + message;
    }
}
