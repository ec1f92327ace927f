package lmcache4j.server.mp;

import java.util.List;

/**
 * What the lower tiers have done, for {@code /api/status} and {@code /metrics}.
 *
 * @param tiers             the tiers, in search order (empty: L2 off)
 * @param queued            published objects waiting for the writer
 * @param written           objects the writer handed to the tiers
 * @param writeDrops        objects not written: the queue was full, the staging memory stayed full, or the pool
 *                          gave the object's memory to another while it was copied out
 * @param writeFailures     puts a tier refused with an error
 * @param tierWrites        objects the tiers report stored (disk files written, remote puts done)
 * @param prefetchJobs      lookups that loaded from the tiers
 * @param prefetchedObjects objects loaded into the pool
 * @param prefetchFailures  loads that stopped at an error, a corrupt or short object, or the timeout
 * @param stagingBytes      staging memory in use
 */
public record MpL2Stats(List<String> tiers, int queued, long written, long writeDrops, long writeFailures, long tierWrites,
                        long prefetchJobs, long prefetchedObjects, long prefetchFailures, long stagingBytes) {
    /** L2 off. */
    public static final MpL2Stats NONE = new MpL2Stats(List.of(), 0, 0, 0, 0, 0, 0, 0, 0, 0);

    public MpL2Stats {
        tiers = List.copyOf(tiers);
    }
}
