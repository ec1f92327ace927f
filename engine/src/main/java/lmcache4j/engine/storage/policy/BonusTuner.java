package lmcache4j.engine.storage.policy;

/**
 * Chooses {@link KvAdaptivePolicy}'s bonus by miniature simulation (Waldspurger et al., "Cache
 * Modeling and Optimization using Miniature Simulations", USENIX ATC '17): a fixed sample of the
 * chunk fingerprints lookups ask for (about one in {@code capacity / replicaCapacity}) is replayed
 * through one small replica per candidate bonus, each holding the sample's share of the cache. After
 * every {@code replicaCapacity} sampled accesses the candidate whose replica hit most (hits decayed
 * by half-life, so the choice follows the traffic) becomes the bonus.
 *
 * <p>The candidates are multiples of the cache's capacity in accesses, from 0 (plain recency) to
 * "fresh chunks always first"; nothing about them is read off a trace. Not thread-safe.
 */
final class BonusTuner {
    /** Candidate bonuses, in cache capacities of accesses; the last stands for "always". */
    static final double[] CANDIDATES = {0, 0.125, 0.25, 0.5, 1, 2, 4, Double.POSITIVE_INFINITY};
    /** Smallest replica: below it the sample is too small to tell the candidates apart. */
    static final int MIN_REPLICA = 4096;
    /** A replica holds at least this fraction of the cache, up to {@link #MAX_REPLICA}. */
    static final int MAX_SAMPLING_DIVISOR = 8;
    /** Largest replica: the eight replicas' memory stays under about 30 MB whatever the cache. */
    static final int MAX_REPLICA = 16384;
    /** Weight kept by past hits at each decision. */
    static final double DECAY = 0.9;
    /** Fingerprints a replica remembers, in replica capacities (as the real policy). */
    static final int HISTORY_FACTOR = KvAdaptivePolicy.HISTORY_FACTOR;

    private final int capacity;
    private final int replicaCapacity;
    /** A fingerprint is sampled when the top 53 bits of its mixed value are below this (2^53: all). */
    private final long threshold;
    private final BonusReplica[] replicas;
    /** The sample's recently asked fingerprints, shared by the replicas (they see the same sample). */
    private final FingerprintLru seen;
    private int sampled;
    private int choice;

    /** @param capacity chunks the real cache holds */
    BonusTuner(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be positive, was " + capacity);
        }
        this.capacity = capacity;
        this.replicaCapacity = Math.min(capacity,
                Math.max(MIN_REPLICA, Math.min(MAX_REPLICA, capacity / MAX_SAMPLING_DIVISOR)));
        double rate = (double) replicaCapacity / capacity;
        this.threshold = (long) Math.ceil(Math.min(1.0, rate) * 0x1p53);
        this.replicas = new BonusReplica[CANDIDATES.length];
        for (int i = 0; i < replicas.length; i++) {
            replicas[i] = new BonusReplica(replicaCapacity, bonusTicks(CANDIDATES[i], replicaCapacity));
        }
        seen = new FingerprintLru(HISTORY_FACTOR * replicaCapacity);
    }

    /** The real cache's bonus for candidate {@code i}: its multiple of the cache's capacity, in accesses. */
    static long bonusTicks(double multiple, int capacity) {
        return Double.isInfinite(multiple) ? Long.MAX_VALUE : (long) (multiple * capacity);
    }

    /** One chunk a lookup asked for; returns whether the choice changed. */
    boolean access(long fingerprint) {
        long mixed = mix(fingerprint);
        if (!inSample(mixed)) {
            return false;
        }
        boolean reused = seen.touch(mixed);
        for (BonusReplica r : replicas) {
            r.access(mixed, reused);
        }
        if (++sampled < replicaCapacity) {
            return false;
        }
        sampled = 0;
        double[] hits = new double[replicas.length];
        for (int i = 0; i < replicas.length; i++) {
            hits[i] = replicas[i].hits();
            replicas[i].decay(DECAY);
        }
        int best = best(hits, choice);
        boolean changed = best != choice;
        choice = best;
        return changed;
    }

    /** Whether the sample takes a chunk whose fingerprint mixes to {@code mixed}. */
    boolean inSample(long mixed) {
        return (mixed >>> 11) < threshold;
    }

    /**
     * The candidate with the most hits; of equal ones, the nearest to {@code choice} (the lower on
     * equal distance), so equal counts never make the choice flap.
     */
    static int best(double[] hits, int choice) {
        int best = choice;
        for (int i = 0; i < hits.length; i++) {
            if (hits[i] > hits[best]
                    || (hits[i] == hits[best] && Math.abs(i - choice) < Math.abs(best - choice))) {
                best = i;
            }
        }
        return best;
    }

    /** Candidate {@code i}'s replica's hits, decayed, for checks. */
    double hits(int i) {
        return replicas[i].hits();
    }

    /** The chosen bonus for the real cache, in accesses. */
    long bonus() {
        return bonusTicks(CANDIDATES[choice], capacity);
    }

    /** The chosen candidate's multiple of the capacity (infinite: fresh chunks always first). */
    double bonusMultiple() {
        return CANDIDATES[choice];
    }

    int replicaCapacity() {
        return replicaCapacity;
    }

    /** Spreads a fingerprint's bits (SplitMix64's finalizer), so sampling by value is uniform. */
    static long mix(long x) {
        x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
        x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
        return x ^ (x >>> 31);
    }
}
