package lmcache4j.allocator;

/**
 * A snapshot of an allocator's accounting.
 *
 * @param name              the allocator
 * @param capacityBytes     bytes it manages now (grows with lazy allocation)
 * @param usedBytes         bytes reserved by live objects, rounding included
 * @param freeBytes         {@code capacityBytes - usedBytes}
 * @param largestFreeBlock  the largest allocation that can succeed now
 * @param fragmentCount     free blocks (pages for the paged allocator)
 * @param liveObjects       objects whose memory has not gone back
 * @param pinnedObjects     live objects with at least one pin
 * @param allocations       successful allocations since creation (batch members counted one by one)
 * @param failedAllocations allocation requests that found no room
 * @param leaksReclaimed    objects that became unreachable unreleased and whose memory was taken back
 */
public record AllocatorStats(String name, long capacityBytes, long usedBytes, long freeBytes, long largestFreeBlock,
                             long fragmentCount, long liveObjects, long pinnedObjects, long allocations,
                             long failedAllocations, long leaksReclaimed) {
}
