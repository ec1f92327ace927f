package lmcache4j.server.mp.store;

import java.time.Duration;
import java.util.Objects;

/**
 * Limits of an {@link MpObjectStore}: how long a client may hold what it took, and how many
 * pending writes it may have, so that no client can pin memory or grow tables without bound.
 *
 * @param readLockTtl how long after its last lookup an object's read locks lapse
 * @param writeTtl how long a write reservation may stay pending before the store aborts it
 * @param maxPendingPerOwner pending write reservations one owner may hold; more are refused (empty)
 * @param maxPendingTotal pending write reservations all owners together may hold
 */
public record MpStoreOptions(Duration readLockTtl, Duration writeTtl, int maxPendingPerOwner, int maxPendingTotal) {
    /** 300 s locks and writes, 1024 pending reservations per owner, 65536 in all. */
    public static final MpStoreOptions DEFAULT = new MpStoreOptions(Duration.ofSeconds(300), Duration.ofSeconds(300), 1024, 65_536);

    /** Checks the values. */
    public MpStoreOptions {
        Objects.requireNonNull(readLockTtl, "readLockTtl");
        Objects.requireNonNull(writeTtl, "writeTtl");
        if (readLockTtl.isNegative() || readLockTtl.isZero() || writeTtl.isNegative() || writeTtl.isZero()) {
            throw new IllegalArgumentException("TTLs must be positive: read " + readLockTtl + ", write " + writeTtl);
        }
        if (maxPendingPerOwner < 1 || maxPendingTotal < maxPendingPerOwner) {
            throw new IllegalArgumentException("need 1 <= maxPendingPerOwner <= maxPendingTotal, got "
                    + maxPendingPerOwner + " and " + maxPendingTotal);
        }
    }

    /** These options with another read-lock TTL. */
    public MpStoreOptions withReadLockTtl(Duration ttl) {
        return new MpStoreOptions(ttl, writeTtl, maxPendingPerOwner, maxPendingTotal);
    }

    /** These options with another write TTL. */
    public MpStoreOptions withWriteTtl(Duration ttl) {
        return new MpStoreOptions(readLockTtl, ttl, maxPendingPerOwner, maxPendingTotal);
    }

    /** These options with other pending-reservation caps. */
    public MpStoreOptions withPendingCaps(int perOwner, int total) {
        return new MpStoreOptions(readLockTtl, writeTtl, perOwner, total);
    }
}
