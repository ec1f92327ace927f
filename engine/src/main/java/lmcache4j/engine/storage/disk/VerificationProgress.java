package lmcache4j.engine.storage.disk;

/**
 * How far the disk tier's check of the chunk files it found at start is: each file's payload is
 * read and its CRC32C compared before the tier offers the chunk, so a file corrupted while the cache
 * was down is never promised by a lookup.
 *
 * @param chunks  chunk files to check (the sound headers recovery kept)
 * @param checked files checked so far, sound or not (files removed or cleared before their turn are
 *                skipped and not counted)
 * @param corrupt files that failed their check: removed, never offered
 * @param failed  files that could not be read: dropped, never offered
 * @param bytes   bytes read by the checks so far (whole files: header, payload, padding)
 * @param nanos   time since the check started, or its whole duration once done
 * @param done    whether the check has finished (or was stopped by close)
 */
public record VerificationProgress(int chunks, int checked, int corrupt, int failed, long bytes, long nanos, boolean done) {
    /** Read rate of the check in GB/s (10^9 bytes per second); 0 before any time has passed. */
    public double gbPerSecond() {
        return nanos == 0 ? 0 : bytes / (double) nanos;
    }
}
