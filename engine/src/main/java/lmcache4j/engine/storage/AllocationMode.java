package lmcache4j.engine.storage;

/**
 * What the CPU tier may do when the allocator has no room (LMCache's {@code eviction} and
 * {@code busy_loop} flags, with the endless busy loop replaced by a deadline).
 */
public enum AllocationMode {
    /** Fail at once. */
    NO_EVICTION,
    /** Evict evictable entries; fail when none is left. The store path: stores never wait. */
    EVICT,
    /**
     * Evict, and when nothing is evictable wait (with a back-off idle strategy) for references and
     * pins to be released, up to {@code blocking_timeout_secs}; then fail with a
     * {@link MemoryWaitTimeoutException}. The retrieve path.
     */
    EVICT_AND_WAIT
}
