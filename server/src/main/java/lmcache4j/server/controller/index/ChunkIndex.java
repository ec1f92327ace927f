package lmcache4j.server.controller.index;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.StampedLock;
import java.util.function.Predicate;

import org.agrona.collections.LongHashSet;

/**
 * The controller's index: chunk key (a 64-bit folded digest) to its holders, with the reverse
 * index per holder, so that dropping a worker removes every entry it had.
 *
 * <p><b>Layout.</b> The forward index is one open-addressing table of (key, holder id) pairs on two
 * primitive arrays ({@link ChunkHolderTable}, 12 bytes a slot, at most 75% full); each holder's
 * reverse index is a {@link KeyLog}, an append-only array of its keys (8 bytes an entry) from which
 * evicted keys are squeezed out once they outnumber the live ones.
 * Holders, instances and locations are interned into small ints ({@link HolderTable}). About 40
 * bytes per (chunk, holder) entry at 10^7 entries ({@code ./lmcache4j bench controller});
 * {@link #memoryBytes()} counts them.
 *
 * <p><b>Concurrency.</b> Writers (in the controller: one ingestion thread) take a
 * {@link StampedLock}'s write lock for one batch at a time. Lookups read optimistically: they take
 * no lock, read the arrays, and retry when a write overlapped ({@link StampedLock#validate}); only
 * after {@value #OPTIMISTIC_TRIES} overlapped tries does a lookup take the read lock, for the few
 * microseconds of its probes. A lookup therefore never makes ingestion wait except in that rare
 * fallback. Removing a holder marks it dead first (lookups skip it at once) and then deletes its
 * entries in slices of {@value #REMOVE_SLICE}, releasing the lock between slices.
 *
 * <p>Steady-state admits, evicts and lookups allocate nothing per chunk (lookups allocate their
 * result only).
 */
public final class ChunkIndex {
    static final int OPTIMISTIC_TRIES = 4;
    static final int REMOVE_SLICE = 1 << 16;

    private final StampedLock lock = new StampedLock();
    private final ChunkHolderTable forward;
    private final HolderTable holders = new HolderTable();
    private final Batch batch = new Batch();
    private final AtomicInteger roundRobin = new AtomicInteger();
    private final ThreadLocal<Scratch> scratch = ThreadLocal.withInitial(Scratch::new);
    private final long maxEntries;
    private long entries;
    private long admitsRefused;
    /** Where {@link Batch#touch}'s reads go, so the compiler cannot drop them. */
    @SuppressWarnings("unused")
    private long touched;

    /** An empty index sized for {@code expectedEntries} (it grows past that), without a cap. */
    public ChunkIndex(int expectedEntries) {
        this(expectedEntries, Long.MAX_VALUE);
    }

    /**
     * An empty index sized for {@code expectedEntries} (it grows past that) that holds at most
     * {@code maxEntries}: admits beyond it are refused and counted ({@link #admitsRefused()}).
     */
    public ChunkIndex(int expectedEntries, long maxEntries) {
        if (expectedEntries < 0 || maxEntries < 1) {
            throw new IllegalArgumentException("expected entries must be >= 0 and max entries >= 1, were "
                    + expectedEntries + " and " + maxEntries);
        }
        this.maxEntries = maxEntries;
        forward = new ChunkHolderTable((int) Math.min(expectedEntries, maxEntries));
    }

    /** An empty index with room for about a million entries before it first grows. */
    public ChunkIndex() {
        this(1 << 20);
    }

    /**
     * Opens a write batch: holds the write lock until {@link Batch#close()}. One writer at a time;
     * a second caller waits. Use with try-with-resources; the returned object is reused.
     */
    public Batch batch() {
        long stamp = lock.writeLock();
        batch.stamp = stamp;
        return batch;
    }

    /** Changes made under the write lock; see {@link #batch()}. */
    public final class Batch implements AutoCloseable {
        private long stamp;

        private Batch() {
        }

        /** The id of {@code h} for {@link #admit}/{@link #evict}, interned on first use. */
        public int holder(Holder h) {
            return holders.intern(h);
        }

        /**
         * Reads the forward table where {@code keys[0..n)} will be probed, so their cache misses
         * overlap instead of coming one admit at a time; call before admitting or evicting them.
         */
        public void touch(long[] keys, int n) {
            touched += forward.touch(keys, n);
        }

        /** Records that {@code holder} holds {@code key}; false when it already did, or the index is full. */
        public boolean admit(int holder, long key) {
            if (entries >= maxEntries) {
                if (!forward.contains(key, holder)) {
                    admitsRefused++;
                }
                return false;
            }
            if (!forward.add(key, holder)) {
                return false;
            }
            holders.keysOf[holder].append(key);
            holders.instanceEntries[holders.instanceOf[holder]]++;
            entries++;
            return true;
        }

        /** Records that {@code holder} no longer holds {@code key}; false when it did not. */
        public boolean evict(int holder, long key) {
            if (!forward.remove(key, holder)) {
                return false;
            }
            KeyLog log = holders.keysOf[holder];
            log.evicted();
            if (log.needsCompaction()) {
                log.compact(k -> forward.contains(k, holder));
            }
            holders.instanceEntries[holders.instanceOf[holder]]--;
            entries--;
            return true;
        }

        @Override
        public void close() {
            lock.unlockWrite(stamp);
        }
    }

    /** Records one admit under its own write lock (for callers without a batch). */
    public boolean admit(Holder h, long key) {
        try (Batch b = batch()) {
            return b.admit(b.holder(h), key);
        }
    }

    /** Records one evict under its own write lock; false when {@code h} did not hold {@code key}. */
    public boolean evict(Holder h, long key) {
        try (Batch b = batch()) {
            int id = holders.find(h);
            return id >= 0 && b.evict(id, key);
        }
    }

    /** Removes every entry of {@code h}; returns how many there were. */
    public long removeHolder(Holder h) {
        int id;
        long stamp = lock.writeLock();
        try {
            id = holders.find(h);
            if (id < 0) {
                return 0;
            }
            holders.markDead(id);
        } finally {
            lock.unlockWrite(stamp);
        }
        return removeDead(id);
    }

    /** Removes every entry of every location of one worker; returns how many there were. */
    public long removeWorker(String instanceId, int workerId) {
        return removeMatching(h -> h.instanceId().equals(instanceId) && h.workerId() == workerId);
    }

    /** Removes every entry of one instance (all its workers and locations); returns how many there were. */
    public long removeInstance(String instanceId) {
        return removeMatching(h -> h.instanceId().equals(instanceId));
    }

    private long removeMatching(Predicate<Holder> which) {
        List<Integer> dead = new ArrayList<>();
        long stamp = lock.writeLock();
        try {
            for (int id : holders.liveHolderIds()) {
                if (which.test(holders.holders[id])) {
                    holders.markDead(id);
                    dead.add(id);
                }
            }
        } finally {
            lock.unlockWrite(stamp);
        }
        long removed = 0;
        for (int id : dead) {
            removed += removeDead(id);
        }
        return removed;
    }

    /** Deletes a dead holder's forward entries in slices, then frees its id. */
    private long removeDead(int id) {
        KeyLog keys = holders.keysOf[id]; // a dead holder's log is read by this method alone
        long removed = 0;
        int next = 0;
        boolean more = true;
        while (more) {
            long stamp = lock.writeLock();
            try {
                int end = (int) Math.min(keys.length(), (long) next + REMOVE_SLICE);
                int slice = 0;
                for (; next < end; next++) {
                    if (forward.remove(keys.at(next), id)) { // false for a stale entry or a repeat
                        slice++;
                    }
                }
                removed += slice;
                entries -= slice;
                more = next < keys.length();
                if (!more) {
                    holders.instanceEntries[holders.instanceOf[id]] -= removed;
                    holders.release(id);
                }
            } finally {
                lock.unlockWrite(stamp);
            }
        }
        return removed;
    }

    /** Admits refused because the index held its maximum of entries. */
    public long admitsRefused() {
        long stamp = lock.readLock();
        try {
            return admitsRefused;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** (chunk, holder) entries. */
    public long entries() {
        long stamp = lock.readLock();
        try {
            return entries;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Instances holding at least one entry or interned holder. */
    public int instances() {
        long stamp = lock.readLock();
        try {
            return holders.instanceCount();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Distinct locations some holder uses (a location is forgotten with its last holder). */
    public int locations() {
        long stamp = lock.readLock();
        try {
            return holders.locationCount();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Bytes held by the index's arrays: forward table, reverse sets, holder tables. */
    public long memoryBytes() {
        long stamp = lock.readLock();
        try {
            return forward.memoryBytes() + holders.memoryBytes();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Whether {@code h} holds {@code key}. */
    public boolean holds(Holder h, long key) {
        long stamp = lock.readLock();
        try {
            int id = holders.find(h);
            return id >= 0 && forward.contains(key, id);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** The holders of {@code key}, sorted by instance, worker, location (for tests and tools). */
    public List<Holder> holdersOf(long key) {
        long stamp = lock.readLock();
        try {
            int[] out = new int[16];
            int n;
            while ((n = ChunkHolderTable.holdersOf(forward.slots(), key, out)) > out.length) {
                out = new int[n];
            }
            List<Holder> result = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                if (holders.live[out[i]] != 0) {
                    result.add(holders.holders[out[i]]);
                }
            }
            result.sort(HOLDER_ORDER);
            return result;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** The keys {@code h} holds, from the reverse index (for tests and tools). */
    public long[] keysOf(Holder h) {
        long stamp = lock.readLock();
        try {
            int id = holders.find(h);
            if (id < 0) {
                return new long[0];
            }
            KeyLog log = holders.keysOf[id];
            LongHashSet seen = new LongHashSet();
            long[] out = new long[log.live()];
            int n = 0;
            for (int i = 0; i < log.length(); i++) {
                long k = log.at(i);
                if (forward.contains(k, id) && seen.add(k)) { // skips stale entries and repeats
                    out[n++] = k;
                }
            }
            return n == out.length ? out : Arrays.copyOf(out, n);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Every live holder with its entry count, sorted. */
    public List<HolderEntries> holders() {
        long stamp = lock.readLock();
        try {
            List<HolderEntries> out = new ArrayList<>();
            for (int id : holders.liveHolderIds()) {
                out.add(new HolderEntries(holders.holders[id], holders.keysOf[id].live()));
            }
            out.sort(Comparator.comparing(HolderEntries::holder, HOLDER_ORDER));
            return out;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** A holder and how many chunks it holds. */
    public record HolderEntries(Holder holder, long entries) {
    }

    static final Comparator<Holder> HOLDER_ORDER = Comparator.comparing(Holder::instanceId)
            .thenComparingInt(Holder::workerId).thenComparing(Holder::location);

    /**
     * For each instance, the longest run of {@code keys[0..n)} it holds contiguously from chunk 0
     * (any of its workers counts) and where; plus the best instance: the longest, ties broken by
     * fewest entries, then in turn. Reads without blocking writers (see the class comment).
     */
    public PrefixMatch longestPrefixes(long[] keys, int n) {
        if (n < 0 || n > keys.length) {
            throw new IllegalArgumentException("n must be 0.." + keys.length + ", was " + n);
        }
        for (int attempt = 0; attempt < OPTIMISTIC_TRIES; attempt++) {
            long stamp = lock.tryOptimisticRead();
            if (stamp == 0) {
                Thread.onSpinWait();
                continue;
            }
            PrefixMatch m;
            try {
                m = match(keys, n);
            } catch (RuntimeException tornRead) { // a concurrent writer moved arrays under us
                continue;
            }
            if (lock.validate(stamp)) {
                return m;
            }
        }
        long stamp = lock.readLock();
        try {
            return match(keys, n);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    private PrefixMatch match(long[] keys, int n) {
        ChunkHolderTable.Slots slots = forward.slots();
        HolderTable t = holders;
        int[] instanceOf = t.instanceOf;
        int[] locationOf = t.locationOf;
        byte[] live = t.live;
        int[] rank = t.locationRank;
        String[] names = t.instanceNames;
        Scratch s = scratch.get();
        s.ensure(names.length);
        int[] prefix = s.prefix;
        int[] location = s.location;
        Arrays.fill(prefix, 0, names.length, 0);
        for (int c = 0; c < n; c++) {
            int count;
            while ((count = ChunkHolderTable.holdersOf(slots, keys[c], s.holders)) > s.holders.length) {
                if (count > HolderTable.MAX_HOLDERS) {
                    throw new IllegalStateException("torn read: " + count + " holders"); // retried by the caller
                }
                s.holders = new int[count];
            }
            boolean advanced = false;
            for (int i = 0; i < count; i++) {
                int h = s.holders[i];
                if (live[h] == 0) {
                    continue;
                }
                int inst = instanceOf[h];
                int loc = locationOf[h];
                if (prefix[inst] == c) {
                    prefix[inst] = c + 1;
                    location[inst] = loc;
                    advanced = true;
                } else if (prefix[inst] == c + 1 && rank[loc] < rank[location[inst]]) {
                    location[inst] = loc;
                }
            }
            if (!advanced) {
                break;
            }
        }
        List<InstanceHit> hits = new ArrayList<>();
        for (int inst = 0; inst < names.length; inst++) {
            if (prefix[inst] > 0) {
                hits.add(new InstanceHit(names[inst], t.locationNames[location[inst]], prefix[inst], t.instanceEntries[inst]));
            }
        }
        hits.sort(Comparator.comparing(InstanceHit::instanceId));
        return new PrefixMatch(hits, best(hits));
    }

    private Optional<InstanceHit> best(List<InstanceHit> hits) {
        if (hits.isEmpty()) {
            return Optional.empty();
        }
        int longest = 0;
        long fewest = Long.MAX_VALUE;
        for (InstanceHit h : hits) {
            if (h.chunks() > longest) {
                longest = h.chunks();
                fewest = h.entries();
            } else if (h.chunks() == longest) {
                fewest = Math.min(fewest, h.entries());
            }
        }
        List<InstanceHit> tied = new ArrayList<>();
        for (InstanceHit h : hits) {
            if (h.chunks() == longest && h.entries() == fewest) {
                tied.add(h);
            }
        }
        return Optional.of(tied.get(Math.floorMod(roundRobin.getAndIncrement(), tied.size())));
    }

    /** One instance's cached prefix: {@code chunks} leading chunks, the last held in {@code location}. */
    public record InstanceHit(String instanceId, String location, int chunks, long entries) {
    }

    /** Every instance's cached prefix (sorted by instance id) and the best one. */
    public record PrefixMatch(List<InstanceHit> hits, Optional<InstanceHit> best) {
    }

    private static final class Scratch {
        int[] prefix = new int[0];
        int[] location = new int[0];
        int[] holders = new int[64];

        void ensure(int instances) {
            if (prefix.length < instances) {
                prefix = new int[instances];
                location = new int[instances];
            }
        }
    }
}
