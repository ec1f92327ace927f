package lmcache4j.cuda.posix;

/**
 * Symbolic names of the Linux errno values a memory call can report, so that an error message
 * says {@code ENOMEM} rather than {@code 12}. Values are those of Linux on x86-64 and AArch64
 * (asm-generic), which agree for every name listed here.
 */
public final class Errno {
    private static final String[] NAMES = new String[41];

    static {
        String[] names = {
            null, "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF",
            "ECHILD", "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV",
            "ENODEV", "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG",
            "ENOSPC", "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE", "EDEADLK",
            "ENAMETOOLONG", "ENOLCK", "ENOSYS", "ENOTEMPTY", "ELOOP"
        };
        System.arraycopy(names, 0, NAMES, 0, names.length);
    }

    private Errno() {
    }

    /** The symbolic name of {@code errno}, or {@code "errno <n>"} for a value not listed. */
    public static String name(int errno) {
        if (errno > 0 && errno < NAMES.length && NAMES[errno] != null) {
            return NAMES[errno];
        }
        return "errno " + errno;
    }
}
