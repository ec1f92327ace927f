package lmcache4j.cuda.posix;

/**
 * A libc or system call failed. Carries the call (with its arguments as text), the errno value,
 * its symbolic name and the C library's message for it.
 */
public final class PosixException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final int errno;

    public PosixException(String call, int errno, String hint) {
        super(call + " failed: " + Errno.name(errno) + " (" + errno + "): " + Posix.strerror(errno)
                + (hint == null || hint.isEmpty() ? "" : ". " + hint));
        this.call = call;
        this.errno = errno;
    }

    /** The failed call, for example {@code "mlock(0x7f3a00000000, 1073741824)"}. */
    public String call() {
        return call;
    }

    /** The errno value the call reported. */
    public int errno() {
        return errno;
    }

    /** The symbolic name of {@link #errno()}, for example {@code "ENOMEM"}. */
    public String errnoName() {
        return Errno.name(errno);
    }
}
