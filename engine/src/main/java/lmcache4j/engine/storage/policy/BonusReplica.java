package lmcache4j.engine.storage.policy;

import org.agrona.collections.Long2LongHashMap;

/**
 * A miniature copy of {@link KvAdaptivePolicy}'s eviction rule with one fixed bonus, run on a
 * sample of the chunks a cache is asked for: it counts the hits that bonus would have had, so
 * {@link BonusTuner} can hand the real cache the bonus that hits most. Chunks are fingerprints;
 * a hit is counted per chunk (the sample has no prefixes to respect). Not thread-safe.
 */
final class BonusReplica {
    private static final int NONE = -1;
    private static final byte FRESH = 0;
    private static final byte REUSED = 1;

    private final int capacity;
    private final long bonus;
    private final Long2LongHashMap slots = new Long2LongHashMap(NONE);
    private final long[] fingerprints;
    private final long[] stamps;
    private final int[] prev;
    private final int[] next;
    private final byte[] list;
    /** Eldest and youngest slot of each list, indexed by FRESH / REUSED. */
    private final int[] eldest = {NONE, NONE};
    private final int[] youngest = {NONE, NONE};
    private int size;
    private int free;
    private long clock;
    private double hits;

    /**
     * @param capacity chunks the replica holds
     * @param bonus    how many accesses longer a reused chunk stays than a fresh one of the same age
     *                 ({@link Long#MAX_VALUE}: fresh chunks always go first)
     */
    BonusReplica(int capacity, long bonus) {
        this.capacity = capacity;
        this.bonus = bonus;
        fingerprints = new long[capacity];
        stamps = new long[capacity];
        prev = new int[capacity];
        next = new int[capacity];
        list = new byte[capacity];
        for (int i = 0; i < capacity; i++) {
            next[i] = i + 1 < capacity ? i + 1 : NONE;
        }
    }

    /**
     * One request for the chunk {@code fingerprint}: a hit refreshes it, a miss stores it.
     *
     * @param reused whether the sample asked for it before, within the remembered history (the
     *               tuner keeps one history for all its replicas: they see the same sample)
     */
    void access(long fingerprint, boolean reused) {
        clock++;
        int slot = (int) slots.get(fingerprint);
        if (slot != NONE) {
            hits++;
            unlink(slot);
            link(slot, REUSED);
            return;
        }
        if (size == capacity) {
            evict();
        }
        slot = free;
        free = next[slot];
        fingerprints[slot] = fingerprint;
        slots.put(fingerprint, slot);
        size++;
        link(slot, reused ? REUSED : FRESH);
    }

    /** Hits counted so far, decayed. */
    double hits() {
        return hits;
    }

    /** Multiplies the hit count by {@code factor}, so recent hits weigh more. */
    void decay(double factor) {
        hits *= factor;
    }

    private void evict() {
        int f = eldest[FRESH];
        int r = eldest[REUSED];
        int victim = r == NONE || (f != NONE && KvAdaptivePolicy.freshGoesFirst(stamps[f], stamps[r], bonus)) ? f : r;
        unlink(victim);
        slots.remove(fingerprints[victim]);
        next[victim] = free;
        free = victim;
        size--;
    }

    private void link(int slot, byte to) {
        list[slot] = to;
        stamps[slot] = clock;
        prev[slot] = youngest[to];
        next[slot] = NONE;
        if (youngest[to] != NONE) {
            next[youngest[to]] = slot;
        } else {
            eldest[to] = slot;
        }
        youngest[to] = slot;
    }

    private void unlink(int slot) {
        byte from = list[slot];
        int p = prev[slot];
        int n = next[slot];
        if (p != NONE) {
            next[p] = n;
        } else {
            eldest[from] = n;
        }
        if (n != NONE) {
            prev[n] = p;
        } else {
            youngest[from] = p;
        }
    }
}
