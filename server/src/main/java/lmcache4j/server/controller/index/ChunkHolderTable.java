package lmcache4j.server.controller.index;

/**
 * The forward index: an open-addressing multimap from a 64-bit chunk key to the small-int ids of
 * its holders, stored as (key, holder) pairs side by side in one primitive array (16 bytes a slot:
 * a probe reads one cache line, where two parallel arrays cost two misses an insert, which was
 * most of an admit's time).
 *
 * <p>Slots are probed linearly from the home slot of the KEY alone, so every holder of one key
 * sits in the run that starts there: {@link #holdersOf} reads one run, and removal shifts later
 * members of the run back (no tombstones, so long-lived tables do not degrade). Nothing here
 * allocates except growth, which doubles the array at {@value #MAX_LOAD_PERCENT}% load.
 *
 * <p>Not thread-safe: {@link ChunkIndex} serializes writers and validates readers.
 */
final class ChunkHolderTable {
    static final int MAX_LOAD_PERCENT = 75;
    private static final int MIN_CAPACITY = 1 << 4;

    /** The array of one generation; replaced whole on growth so a reader never mixes two. */
    static final class Slots {
        /** Slot i: {@code pairs[2i]} the key, {@code pairs[2i + 1]} the holder id + 1 (0: an empty slot). */
        final long[] pairs;
        final int mask;

        Slots(int capacity) {
            pairs = new long[2 * capacity];
            mask = capacity - 1;
        }

        long key(int i) {
            return pairs[2 * i];
        }

        /** Holder id + 1; 0 for an empty slot. */
        int stored(int i) {
            return (int) pairs[2 * i + 1];
        }

        void set(int i, long key, int stored) {
            pairs[2 * i] = key;
            pairs[2 * i + 1] = stored;
        }

        int capacity() {
            return mask + 1;
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
        if (needed > 1 << 29) {
            throw new IllegalArgumentException("an index of " + entries + " entries is beyond one table's 2^29 slots");
        }
        return Integer.highestOneBit((int) needed - 1) << 1;
    }

    private void allocate(int capacity) {
        slots = new Slots(capacity);
        growAt = (int) ((long) capacity * MAX_LOAD_PERCENT / 100);
    }

    /** The current array, for readers that validate afterwards. */
    Slots slots() {
        return slots;
    }

    int size() {
        return size;
    }

    int capacity() {
        return slots.capacity();
    }

    /** Bytes the array holds (its payload; the header is noise at this size). */
    long memoryBytes() {
        return (long) capacity() * 2 * Long.BYTES;
    }

    static int home(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L; // LMCache's builtin hash() keys need not be well spread; mix them
        return (int) (h ^ (h >>> 29)) & mask;
    }

    /**
     * Reads the home slot of each of {@code keys[0..n)} and returns a value made of them, so that
     * the CPU issues the (independent) cache misses of a whole batch at once before
     * {@link #add}/{@link #remove} probe them one by one: Java has no prefetch instruction, and a
     * load whose result is used is the portable way to ask for the line.
     */
    long touch(long[] keys, int n) {
        Slots s = slots;
        long[] pairs = s.pairs;
        long sink = 0;
        for (int i = 0; i < n; i++) {
            sink += pairs[2 * home(keys[i], s.mask) + 1];
        }
        return sink;
    }

    /** Adds the pair; false when it was already there. */
    boolean add(long key, int holder) {
        Slots s = slots;
        int stored = holder + 1;
        int i = home(key, s.mask);
        int at;
        while ((at = s.stored(i)) != 0) {
            if (at == stored && s.key(i) == key) {
                return false;
            }
            i = (i + 1) & s.mask;
        }
        s.set(i, key, stored);
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
        int at;
        while ((at = s.stored(i)) != 0) {
            if (at == stored && s.key(i) == key) {
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
        int at;
        for (int i = home(key, s.mask); (at = s.stored(i)) != 0; i = (i + 1) & s.mask) {
            if (at == stored && s.key(i) == key) {
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
        int at;
        for (int probes = 0; probes <= s.mask && (at = s.stored(i)) != 0; probes++) {
            if (s.key(i) == key) {
                if (n < out.length) {
                    out[n] = at - 1;
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
            if (s.stored(j) == 0) {
                break;
            }
            int k = home(s.key(j), s.mask);
            // j may fill the hole unless its home lies cyclically in (hole, j].
            boolean homeBetween = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
            if (!homeBetween) {
                s.set(hole, s.key(j), s.stored(j));
                hole = j;
            }
        }
        s.set(hole, 0, 0);
    }

    private void grow() {
        Slots old = slots;
        if (old.capacity() >= 1 << 29) {
            throw new IllegalStateException("the chunk index is full: " + size + " entries in 2^29 slots");
        }
        allocate(old.capacity() << 1);
        Slots s = slots;
        for (int i = 0; i < old.capacity(); i++) {
            int stored = old.stored(i);
            if (stored != 0) {
                int j = home(old.key(i), s.mask);
                while (s.stored(j) != 0) {
                    j = (j + 1) & s.mask;
                }
                s.set(j, old.key(i), stored);
            }
        }
    }
}
