package lmcache4j.server.mp.store;

/**
 * A snapshot of an {@link MpObjectStore}, for metrics and tests.
 *
 * @param readyObjects published objects (readable)
 * @param writingObjects objects reserved and not yet published
 * @param orphanObjects objects a forced clear dropped while locked or being written, whose memory waits for their holders
 * @param lockedObjects objects with at least one read lock
 * @param usedBytes pool bytes held by all of the above (alignment included)
 * @param capacityBytes the pool's size
 * @param pendingReservations write reservations not yet finished or aborted
 * @param evictions objects evicted to make room or to trim a salt
 * @param refusedNoMemory keys skipped by reserveWrite because nothing more could be evicted
 * @param refusedPendingCap reserveWrite calls refused because of the pending-reservation caps
 * @param expiredReadLocks read locks that lapsed at their TTL
 * @param expiredWrites reservations aborted at their TTL
 * @param releaseUnderflows releases of objects that held no lock (no-ops)
 * @param staleReservations finish or abort calls on reservations no longer pending (no-ops)
 */
public record MpStoreStats(long readyObjects, long writingObjects, long orphanObjects, long lockedObjects,
        long usedBytes, long capacityBytes, long pendingReservations, long evictions, long refusedNoMemory,
        long refusedPendingCap, long expiredReadLocks, long expiredWrites, long releaseUnderflows, long staleReservations) {
}
