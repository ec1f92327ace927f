package lmcache4j.engine;

/**
 * The engine's prefetch counters since it started. Every started prefetch ends exactly once as
 * consumed, cancelled, expired or closed (or is still held: {@code held}); a refused one never started.
 *
 * @param started         prefetches started ({@link LMCacheEngine#prefetch}, asynchronous lookups)
 * @param consumed        ended by their request's retrieve
 * @param cancelled       ended by {@link LMCacheEngine#releasePrefetch} or replaced by a newer one of the same request
 * @param expired         ended because no retrieve came within {@code pin_timeout_sec}
 * @param refused         not started: {@code max_pending_prefetches} were held (a miss for that lookup)
 * @param held            still held for a request
 * @param readyChunks     chunks made ready over all prefetches
 * @param lowerTierChunks of those, chunks brought up from a tier below the CPU tier
 * @param retrievedChunks chunks a retrieve took from its request's prefetch
 */
public record PrefetchStats(long started, long consumed, long cancelled, long expired, long refused, int held, long readyChunks,
                            long lowerTierChunks, long retrievedChunks) {
}
