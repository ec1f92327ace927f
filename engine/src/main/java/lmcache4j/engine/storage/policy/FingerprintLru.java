package lmcache4j.engine.storage.policy;

import java.util.Arrays;

import org.agrona.collections.Long2LongHashMap;

/**
 * A bounded set of 64-bit key fingerprints in recency order: the memory of keys a cache no longer
 * holds (ghost lists, reuse history). Keeps fingerprints, never keys, so remembering a key costs
 * about 40 bytes and does not keep the key object alive. When full, adding forgets the eldest.
 * The bound may be raised later ({@link #growTo}); it never shrinks. Not thread-safe.
 */
final class FingerprintLru {
    private static final int NONE = -1;

    private final Long2LongHashMap slots = new Long2LongHashMap(NONE);
    private long[] fingerprints;
    private int[] prev;
    private int[] next;
    private int limit;
    private int size;
    private int eldest = NONE;
    private int youngest = NONE;
    /** Free slots, chained through {@code next}. */
    private int free = NONE;
    private int used;

    /** @param limit how many fingerprints it holds at most, at least 1 */
    FingerprintLru(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("a fingerprint set holds at least 1, was " + limit);
        }
        this.limit = limit;
        int initial = Math.min(limit, 1024);
        fingerprints = new long[initial];
        prev = new int[initial];
        next = new int[initial];
    }

    /** Raises the bound to {@code newLimit} (no-op when it is not larger). */
    void growTo(int newLimit) {
        limit = Math.max(limit, newLimit);
    }

    int limit() {
        return limit;
    }

    int size() {
        return size;
    }

    boolean contains(long fingerprint) {
        return slots.get(fingerprint) != NONE;
    }

    /**
     * Makes {@code fingerprint} the youngest, adding it (and forgetting the eldest when full).
     *
     * @return whether it was held before
     */
    boolean touch(long fingerprint) {
        int slot = (int) slots.get(fingerprint);
        if (slot != NONE) {
            unlink(slot);
            linkYoungest(slot);
            return true;
        }
        add(fingerprint);
        return false;
    }

    /** Adds {@code fingerprint} as the youngest unless held; forgets the eldest when full. */
    void add(long fingerprint) {
        if (slots.get(fingerprint) != NONE) {
            return;
        }
        if (size == limit) {
            removeEldest();
        }
        int slot = takeSlot();
        fingerprints[slot] = fingerprint;
        slots.put(fingerprint, slot);
        linkYoungest(slot);
        size++;
    }

    /** Forgets {@code fingerprint}; whether it was held. */
    boolean remove(long fingerprint) {
        int slot = (int) slots.remove(fingerprint);
        if (slot == NONE) {
            return false;
        }
        unlink(slot);
        releaseSlot(slot);
        size--;
        return true;
    }

    /** Forgets the eldest; returns it, or 0 when empty (check {@link #size()} first). */
    long removeEldest() {
        if (eldest == NONE) {
            return 0;
        }
        long fingerprint = fingerprints[eldest];
        remove(fingerprint);
        return fingerprint;
    }

    private int takeSlot() {
        if (free != NONE) {
            int slot = free;
            free = next[slot];
            return slot;
        }
        if (used == fingerprints.length) {
            int capacity = (int) Math.min((long) limit, Math.max(16L, 2L * fingerprints.length));
            fingerprints = Arrays.copyOf(fingerprints, capacity);
            prev = Arrays.copyOf(prev, capacity);
            next = Arrays.copyOf(next, capacity);
        }
        return used++;
    }

    private void releaseSlot(int slot) {
        next[slot] = free;
        free = slot;
    }

    private void linkYoungest(int slot) {
        prev[slot] = youngest;
        next[slot] = NONE;
        if (youngest != NONE) {
            next[youngest] = slot;
        } else {
            eldest = slot;
        }
        youngest = slot;
    }

    private void unlink(int slot) {
        int p = prev[slot];
        int n = next[slot];
        if (p != NONE) {
            next[p] = n;
        } else {
            eldest = n;
        }
        if (n != NONE) {
            prev[n] = p;
        } else {
            youngest = p;
        }
    }
}
