package lmcache4j.cuda.posix;

/**
 * A resource limit as {@code getrlimit(2)} reports it, in bytes for memory limits.
 *
 * @param soft the limit in force, or {@link #UNLIMITED}
 * @param hard the ceiling an unprivileged process may raise {@code soft} to, or {@link #UNLIMITED}
 */
public record ResourceLimit(long soft, long hard) {
    /** {@code RLIM_INFINITY}. */
    public static final long UNLIMITED = -1L;

    /** Whether {@code bytes} fit under the soft limit. */
    public boolean allows(long bytes) {
        return soft == UNLIMITED || Long.compareUnsigned(bytes, soft) <= 0;
    }

    /** The limit as {@code ulimit} would print it, in bytes: a number or {@code unlimited}. */
    public static String describe(long limit) {
        return limit == UNLIMITED ? "unlimited" : Long.toUnsignedString(limit) + " bytes";
    }

    @Override
    public String toString() {
        return "soft " + describe(soft) + ", hard " + describe(hard);
    }
}
