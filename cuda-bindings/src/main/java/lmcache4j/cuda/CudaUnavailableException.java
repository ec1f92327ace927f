package lmcache4j.cuda;

/** A CUDA operation was asked of a runtime whose library could not be loaded. Says why. */
public final class CudaUnavailableException extends CudaException {
    private static final long serialVersionUID = 1L;

    public CudaUnavailableException(String operation, CudaStatus.Unavailable status) {
        super(operation + " needs the CUDA runtime, which is " + status);
    }
}
