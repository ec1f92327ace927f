package lmcache4j.server.controller.index;

/**
 * The forward index: an open-addressing multimap from a 64-bit chunk key to the small-int ids of
 * its holders, stored as (key, holder) pairs in two parallel primitive arrays (12 bytes a slot).
 *
 * <p>Slots are probed linearly from the home slot of the KEY alone, so every holder of one key
 * sits in the run that starts there: {@link #holdersOf} reads one run, and removal shifts later
 * members of the run back (no tombstones, so long-lived tables do not degrade). Nothing here
 * allocates except growth, which doubles the arrays at {@value #MAX_LOAD_PERCENT}% load.
 *
 * <p>Not thread-safe: {@link ChunkIndex} serializes writers and validates readers.
 */
final class ChunkHolderTable {
    static final int MAX_LOAD_PERCENT = 75;
    private static final int MIN_CAPACITY = 1 << 4;

    /** The arrays of one generation; replaced whole on growth so a reader never mixes two. */
    static final class Slots {
        final long[] keys;
        /** holder id + 1; 0 marks an empty slot. */
        final int[] holders;
        final int mask;

        Slots(int capacity) {
            keys = new long[capacity];
            holders = new int[capacity];
            mask = capacity - 1;
        }
    }

    private Slots slots;
    private int size;
    private int growAt;

    ChunkHolderTable(int expectedEntries) {
        allocate(capacityFor(expectedEntries));
    }

    static int capacityFor(int entries) {
        long needed = Math.max(MIN_CAPACITY, (long) entries * 100 / MAX_LOAD_PERCENT + 1);
        if (needed > 1 << 30) {
            throw new IllegalArgumentException("an index of " + entries + " entries is beyond one table's 2^30 slots");
        }
        return Integer.highestOneBit((int) needed - 1) << 1;
    }

    private void allocate(int capacity) {
        slots = new Slots(capacity);
        growAt = (int) ((long) capacity * MAX_LOAD_PERCENT / 100);
    }

    /** The current arrays, for readers that validate afterwards. */
    Slots slots() {
        return slots;
    }

    int size() {
        return size;
    }

    int capacity() {
        return slots.keys.length;
    }

    /** Bytes the arrays hold (their payload; headers are noise at this size). */
    long memoryBytes() {
        return (long) capacity() * (Long.BYTES + Integer.BYTES);
    }

    static int home(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L; // LMCache's builtin hash() keys need not be well spread; mix them
        return (int) (h ^ (h >>> 29)) & mask;
    }

    /** Adds the pair; false when it was already there. */
    boolean add(long key, int holder) {
        Slots s = slots;
        int stored = holder + 1;
        int i = home(key, s.mask);
        while (s.holders[i] != 0) {
            if (s.keys[i] == key && s.holders[i] == stored) {
                return false;
            }
            i = (i + 1) & s.mask;
        }
        s.keys[i] = key;
        s.holders[i] = stored;
        if (++size > growAt) {
            grow();
        }
        return true;
    }

    /** Removes the pair; false when it was not there. */
    boolean remove(long key, int holder) {
        Slots s = slots;
        int stored = holder + 1;
        int i = home(key, s.mask);
        while (s.holders[i] != 0) {
            if (s.keys[i] == key && s.holders[i] == stored) {
                removeAt(s, i);
                size--;
                return true;
            }
            i = (i + 1) & s.mask;
        }
        return false;
    }

    boolean contains(long key, int holder) {
        Slots s = slots;
        int stored = holder + 1;
        for (int i = home(key, s.mask); s.holders[i] != 0; i = (i + 1) & s.mask) {
            if (s.keys[i] == key && s.holders[i] == stored) {
                return true;
            }
        }
        return false;
    }

    /**
     * Writes the holders of {@code key} into {@code out} and returns how many there are; when that
     * is more than {@code out.length}, only the first {@code out.length} were written. A reader
     * racing a writer may see garbage here; {@link ChunkIndex} validates before using it. The probe
     * is bounded by the capacity so a torn read cannot loop forever.
     */
    static int holdersOf(Slots s, long key, int[] out) {
        int n = 0;
        int i = home(key, s.mask);
        for (int probes = 0; probes <= s.mask && s.holders[i] != 0; probes++) {
            if (s.keys[i] == key) {
                if (n < out.length) {
                    out[n] = s.holders[i] - 1;
                }
                n++;
            }
            i = (i + 1) & s.mask;
        }
        return n;
    }

    /** Backward-shift deletion: moves later run members whose home allows it into the hole. */
    private static void removeAt(Slots s, int hole) {
        int j = hole;
        while (true) {
            j = (j + 1) & s.mask;
            if (s.holders[j] == 0) {
                break;
            }
            int k = home(s.keys[j], s.mask);
            // j may fill the hole unless its home lies cyclically in (hole, j].
            boolean homeBetween = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
            if (!homeBetween) {
                s.keys[hole] = s.keys[j];
                s.holders[hole] = s.holders[j];
                hole = j;
            }
        }
        s.holders[hole] = 0;
        s.keys[hole] = 0;
    }

    private void grow() {
        Slots old = slots;
        if (old.keys.length >= 1 << 30) {
            throw new IllegalStateException("the chunk index is full: " + size + " entries in 2^30 slots");
        }
        allocate(old.keys.length << 1);
        Slots s = slots;
        for (int i = 0; i < old.keys.length; i++) {
            if (old.holders[i] != 0) {
                int j = home(old.keys[i], s.mask);
                while (s.holders[j] != 0) {
                    j = (j + 1) & s.mask;
                }
                s.keys[j] = old.keys[i];
                s.holders[j] = old.holders[i];
            }
        }
    }
}
