package lmcache4j.server.mp.store;

import lmcache4j.server.mp.wire.MpObjectKey;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;

/**
 * The multiprocess server's CPU tier: objects keyed by {@link MpObjectKey}, each a slice of one
 * shared arena that workers map too, so they copy KV in and out themselves (design §6–7).
 *
 * <p><b>Life of an object.</b> {@link #reserveWrite} allocates it <i>writing</i> (invisible to
 * lookups, never evicted); {@link #finishWrite} publishes it <i>ready</i>; {@link #abortWrite},
 * {@link #abortAll}, or the write TTL free it. A ready object is read-locked by
 * {@link #prefixLockAllRanks} (the scheduler's lookup), read by {@link #unsafeRead} and unlocked by
 * {@link #releaseRead} or the lock TTL. Only ready objects with no read lock are evictable, in
 * least-recently-used order; memory is never handed out while a lock or a write holds it.
 *
 * <p><b>Clearing.</b> {@link #clear clear(false)} drops every evictable object. {@code clear(true)}
 * also drops locked and writing objects from the index at once (lookups stop finding them and
 * their keys can be written anew), but their memory becomes an <i>orphan</i> held until the last
 * lock is released, the write is finished or aborted, or the TTL passes; only then is it reused, so
 * a client still copying never races a new owner of the same bytes.
 *
 * <p><b>Accounting.</b> Bytes are the allocator's (alignment included). Per-{@code cache_salt}
 * usage counts indexed objects (ready and writing) for quotas; {@link #trimSalt} evicts a salt's
 * evictable objects down to a limit.
 *
 * <p>Thread-safe: one lock guards everything; operations are short (no copying under it). Misuse
 * (finishing a reservation twice, releasing an unlocked object) is a counted no-op.
 */
public final class MpObjectStore implements AutoCloseable {
    /** The most read locks one object can hold; lookups stop at an object that would exceed it. */
    static final int MAX_READERS = 1 << 20;
    /** The most read locks one lookup may take on each object. */
    public static final int MAX_READERS_PER_LOOKUP = 4096;

    private enum State { WRITING, READY }

    /** One stored object. Guarded by the store's lock. */
    static final class Entry {
        final MpObjectKey key;
        final MemoryObj memory;
        final ObjectLayout layout;
        /** Distinct for every object the store ever held: a slot's memory reused by another object gets another. */
        final long generation;
        State state = State.WRITING;
        boolean indexed = true;
        int readers;
        long lockDeadline;

        Entry(MpObjectKey key, MemoryObj memory, ObjectLayout layout, long generation) {
            this.key = key;
            this.memory = memory;
            this.layout = layout;
            this.generation = generation;
        }

        Slot slot(int index) {
            return new Slot(index, key, memory.address(), layout.byteLength(), layout, generation);
        }
    }

    private final Object mutex = new Object();
    private final HostArena arena;
    private final TensorMemoryAllocator allocator;
    private final MpStoreOptions options;
    private final LongSupplier nanoClock;
    private final long capacity;

    private final Map<MpObjectKey, Entry> index = new HashMap<>();
    /** Ready, unlocked, indexed entries, eldest first. */
    private final LinkedHashMap<MpObjectKey, Entry> lru = new LinkedHashMap<>();
    /** Entries with readers > 0, indexed or orphaned. */
    private final Set<Entry> locked = Collections.newSetFromMap(new IdentityHashMap<>());
    /** Entries dropped by a forced clear whose memory waits for locks or writes. */
    private final List<Entry> orphans = new ArrayList<>();
    /** The last {@link Entry#generation} handed out. */
    private long generations;
    private final PendingWrites pending;
    private final Map<String, Long> bytesBySalt = new HashMap<>();
    private long usedBytes;
    private long writing;
    private long evictions;
    private long refusedNoMemory;
    private long refusedPendingCap;
    private long expiredReadLocks;
    private long expiredWrites;
    private long releaseUnderflows;
    private long staleReservations;
    private boolean closed;

    /**
     * A store over {@code arena}, which it owns from now on and closes on {@link #close()}.
     *
     * @param nanoClock a monotonic nanosecond clock ({@code System::nanoTime}); tests inject their own
     */
    public MpObjectStore(HostArena arena, MpStoreOptions options, LongSupplier nanoClock) {
        this.arena = Objects.requireNonNull(arena, "arena");
        this.options = Objects.requireNonNull(options, "options");
        this.pending = new PendingWrites(options.maxPendingPerOwner(), options.maxPendingTotal());
        this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
        this.allocator = TensorMemoryAllocator.create("mp-l1", arena, TensorMemoryAllocator.DEFAULT_ALIGNMENT);
        this.capacity = arena.byteSize();
    }

    /** A store with the {@link MpStoreOptions#DEFAULT default} limits and the system clock. */
    public MpObjectStore(HostArena arena) {
        this(arena, MpStoreOptions.DEFAULT, System::nanoTime);
    }

    /** The whole shared segment; {@link Slot#offset()}s are relative to its start. */
    public MemorySegment segment() {
        return arena.segment();
    }

    /** The limits this store enforces. */
    public MpStoreOptions options() {
        return options;
    }

    // ---- writes -------------------------------------------------------------------------------

    /**
     * Reserves a write-locked object of {@code layout} for every key not already present or being
     * written, evicting least-recently-used evictable objects when the pool is full. Keys present,
     * repeated, or that find no memory even after evicting are skipped (LMCache's
     * {@code reserve_write(…, "new")}). When the owner or the store has too many pending
     * reservations, nothing is reserved.
     *
     * @return the reservation; {@link WriteReservation#isEmpty() empty} (and not pending) when nothing was reserved
     * @throws IllegalArgumentException when an object of {@code layout} can never fit the pool
     */
    public WriteReservation reserveWrite(String owner, List<MpObjectKey> keys, ObjectLayout layout) {
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(layout, "layout");
        checkKeys(keys);
        long aligned = (layout.byteLength() + TensorMemoryAllocator.DEFAULT_ALIGNMENT - 1) & -TensorMemoryAllocator.DEFAULT_ALIGNMENT;
        if (aligned > capacity) {
            throw new IllegalArgumentException(layout + " needs " + layout.byteLength() + " bytes, more than the pool's "
                    + capacity);
        }
        synchronized (mutex) {
            ensureOpen();
            long now = nanoClock.getAsLong();
            if (!pending.admits(owner)) {
                refusedPendingCap++;
                return new WriteReservation(0, owner, List.of(), List.of(), now);
            }
            List<Slot> slots = new ArrayList<>();
            List<Entry> entries = new ArrayList<>();
            boolean swept = false;
            for (int i = 0; i < keys.size(); i++) {
                MpObjectKey key = keys.get(i);
                if (index.containsKey(key)) {
                    continue;
                }
                Optional<MemoryObj> memory = allocator.allocate(layout.shape(), layout.dtype(), MemoryFormat.BINARY);
                while (memory.isEmpty()) {
                    if (!swept) {
                        swept = true;
                        expireDue(now);
                    } else if (!lru.isEmpty()) {
                        evict(lru.values().iterator().next());
                    } else {
                        break;
                    }
                    memory = allocator.allocate(layout.shape(), layout.dtype(), MemoryFormat.BINARY);
                }
                if (memory.isEmpty()) {
                    refusedNoMemory++;
                    continue;
                }
                Entry entry = new Entry(key, memory.get(), layout, ++generations);
                index.put(key, entry);
                usedBytes += entry.memory.physicalSize();
                bytesBySalt.merge(key.cacheSalt(), entry.memory.physicalSize(), Long::sum);
                writing++;
                entries.add(entry);
                slots.add(entry.slot(i));
            }
            if (entries.isEmpty()) {
                return new WriteReservation(0, owner, List.of(), List.of(), now);
            }
            return pending.add(owner, slots, entries, now + options.writeTtl().toNanos());
        }
    }

    /**
     * Publishes a pending reservation: its objects become readable and evictable (those a forced
     * clear orphaned meanwhile are freed instead).
     *
     * @return whether it was pending; false (a counted no-op) when already finished, aborted, expired or empty
     */
    public boolean finishWrite(WriteReservation reservation) {
        synchronized (mutex) {
            if (!takePending(reservation)) {
                return false;
            }
            if (nanoClock.getAsLong() - reservation.deadlineNanos >= 0) {
                expiredWrites++;
                dropEntries(reservation);
                return false;
            }
            for (Entry entry : reservation.entries) {
                writing--;
                entry.state = State.READY;
                if (entry.indexed) {
                    lru.put(entry.key, entry);
                } else {
                    orphans.remove(entry);
                    free(entry);
                }
            }
            return true;
        }
    }

    /**
     * Frees a pending reservation's objects without publishing them.
     *
     * @return whether it was pending; false (a counted no-op) otherwise
     */
    public boolean abortWrite(WriteReservation reservation) {
        synchronized (mutex) {
            if (!takePending(reservation)) {
                return false;
            }
            dropEntries(reservation);
            return true;
        }
    }

    /** Aborts every pending reservation of {@code owner} (an instance that went away); returns how many. */
    public int abortAll(String owner) {
        synchronized (mutex) {
            Collection<WriteReservation> mine = pending.takeAll(owner);
            for (WriteReservation reservation : mine) {
                dropEntries(reservation);
            }
            return mine.size();
        }
    }

    // ---- reads --------------------------------------------------------------------------------

    /**
     * Counts the leading ready objects of {@code keys} and read-locks each of them
     * {@code readersPerObject} times (0 means 1, LMCache's {@code num_kv_readers} default).
     */
    public int lookupAndLock(List<MpObjectKey> keys, int readersPerObject) {
        return prefixLockAllRanks(keys, 1, readersPerObject);
    }

    /**
     * The tensor-parallel rule (§7): {@code keys} is chunk-major, rank-minor ({@code ranks} keys per
     * chunk); counts the leading chunks whose every rank object is ready, and read-locks exactly
     * those objects {@code readersPerObject} times each (0 means 1).
     *
     * @return the number of chunks hit
     * @throws IllegalArgumentException when {@code keys} is not a whole number of chunks
     */
    public int prefixLockAllRanks(List<MpObjectKey> keys, int ranks, int readersPerObject) {
        int readers = checkedReaders(readersPerObject);
        synchronized (mutex) {
            ensureOpen();
            long now = nanoClock.getAsLong();
            int chunks = prefix(keys, ranks, now, readers);
            long deadline = now + options.readLockTtl().toNanos();
            for (int i = 0; i < chunks * ranks; i++) {
                Entry entry = index.get(keys.get(i));
                if (entry.readers == 0) {
                    lru.remove(entry.key);
                    locked.add(entry);
                }
                entry.readers += readers;
                entry.lockDeadline = deadline;
            }
            return chunks;
        }
    }

    /**
     * Read-locks once each of {@code keys} that is ready and indexed, so its memory stays put while a
     * copier outside the loop (the lower tiers' writer) reads it; release with {@link #releaseRead}.
     *
     * @return the slots locked, {@link Slot#index()} being the key's position in {@code keys}
     */
    public List<Slot> lockReady(List<MpObjectKey> keys) {
        checkKeys(keys);
        synchronized (mutex) {
            ensureOpen();
            long now = nanoClock.getAsLong();
            long deadline = now + options.readLockTtl().toNanos();
            List<Slot> slots = new ArrayList<>(keys.size());
            for (int i = 0; i < keys.size(); i++) {
                Entry entry = index.get(keys.get(i));
                if (entry == null || entry.state != State.READY) {
                    continue;
                }
                expireIfDue(entry, now);
                if (entry.readers >= MAX_READERS) {
                    continue;
                }
                if (entry.readers == 0) {
                    lru.remove(entry.key);
                    locked.add(entry);
                }
                entry.readers++;
                entry.lockDeadline = Math.max(entry.lockDeadline, deadline);
                slots.add(entry.slot(i));
            }
            return slots;
        }
    }

    /**
     * Whether the object {@code slot} was taken from still owns that memory: true proves that nothing
     * else was written there since (ready objects are never written), so a copy made out of it in
     * between holds the object's bytes, even if the copier's read lock lapsed meanwhile.
     */
    public boolean stillHolds(Slot slot) {
        synchronized (mutex) {
            if (closed) {
                return false;
            }
            Entry entry = index.get(slot.key());
            if (entry != null && entry.generation == slot.generation()) {
                return true;
            }
            for (Entry orphan : orphans) {
                if (orphan.generation == slot.generation()) {
                    return true;
                }
            }
            return false;
        }
    }

    /** Like {@link #prefixLockAllRanks} but takes no lock: how many leading chunks are ready now. */
    public int prefixCountAllRanks(List<MpObjectKey> keys, int ranks) {
        synchronized (mutex) {
            ensureOpen();
            return prefix(keys, ranks, nanoClock.getAsLong(), 0);
        }
    }

    /**
     * The slots of {@code keys}, in order, without taking locks: the caller must hold read locks
     * from a lookup. Empty when any key is missing, not ready or not locked (its lock lapsed), so
     * the caller never copies from memory that could be evicted under it.
     */
    public List<Slot> unsafeRead(List<MpObjectKey> keys) {
        checkKeys(keys);
        synchronized (mutex) {
            ensureOpen();
            long now = nanoClock.getAsLong();
            List<Slot> slots = new ArrayList<>(keys.size());
            for (int i = 0; i < keys.size(); i++) {
                Entry entry = index.get(keys.get(i));
                if (entry == null || entry.state != State.READY) {
                    return List.of();
                }
                expireIfDue(entry, now);
                if (entry.readers == 0) {
                    return List.of();
                }
                slots.add(entry.slot(i));
            }
            return slots;
        }
    }

    /**
     * Releases one read lock on each key's object: first an orphaned one a forced clear left
     * locked, else the indexed one. A key holding no lock is a counted no-op.
     *
     * @return how many locks were released
     */
    public int releaseRead(List<MpObjectKey> keys) {
        checkKeys(keys);
        synchronized (mutex) {
            long now = nanoClock.getAsLong();
            int released = 0;
            for (MpObjectKey key : keys) {
                Entry entry = lockedOrphan(key, now);
                if (entry == null) {
                    entry = index.get(key);
                    if (entry != null) {
                        expireIfDue(entry, now);
                    }
                }
                if (entry == null || entry.readers == 0) {
                    releaseUnderflows++;
                    continue;
                }
                entry.readers--;
                released++;
                if (entry.readers == 0) {
                    unlocked(entry);
                }
            }
            return released;
        }
    }

    /** Marks the keys' evictable objects most recently used (LMCache's {@code touch} at end of session). */
    public void touch(List<MpObjectKey> keys) {
        checkKeys(keys);
        synchronized (mutex) {
            for (MpObjectKey key : keys) {
                Entry entry = lru.remove(key);
                if (entry != null) {
                    lru.put(key, entry);
                }
            }
        }
    }

    /** Whether {@code key} is present and ready. */
    public boolean contains(MpObjectKey key) {
        synchronized (mutex) {
            Entry entry = index.get(key);
            return entry != null && entry.state == State.READY;
        }
    }

    // ---- maintenance --------------------------------------------------------------------------

    /**
     * Lapses read locks and aborts write reservations past their TTL; the server calls it
     * periodically (it also runs when a reservation finds the pool full).
     *
     * @return how many locked objects and reservations expired
     */
    public int sweep() {
        synchronized (mutex) {
            return expireDue(nanoClock.getAsLong());
        }
    }

    /**
     * Drops objects. Without {@code force}, every evictable object (ready and unlocked). With
     * {@code force}, every object: locked and writing ones leave the index at once but keep their
     * memory as orphans until released, finished, aborted or expired (see the class comment).
     *
     * @return how many objects left the index
     */
    public int clear(boolean force) {
        synchronized (mutex) {
            int dropped = lru.size();
            for (Entry entry : new ArrayList<>(lru.values())) {
                free(entry);
            }
            if (force) {
                for (Entry entry : new ArrayList<>(index.values())) {
                    unindex(entry);
                    orphans.add(entry);
                    dropped++;
                }
            }
            return dropped;
        }
    }

    /**
     * Evicts {@code salt}'s evictable objects, least recently used first, until its usage is at
     * most {@code limitBytes} (the quota trim of §7) or nothing evictable is left.
     *
     * @return the bytes freed
     */
    public long trimSalt(String salt, long limitBytes) {
        Objects.requireNonNull(salt, "salt");
        synchronized (mutex) {
            long freed = 0;
            Iterator<Entry> it = lru.values().iterator();
            while (bytesBySalt.getOrDefault(salt, 0L) > limitBytes && it.hasNext()) {
                Entry entry = it.next();
                if (entry.key.cacheSalt().equals(salt)) {
                    it.remove();
                    freed += entry.memory.physicalSize();
                    evictions++;
                    free(entry);
                }
            }
            return freed;
        }
    }

    /** Bytes held by {@code salt}'s indexed objects. */
    public long saltUsage(String salt) {
        synchronized (mutex) {
            return bytesBySalt.getOrDefault(salt, 0L);
        }
    }

    /** Bytes held per salt, for quota reports; salts with nothing stored are absent. */
    public Map<String, Long> usageBySalt() {
        synchronized (mutex) {
            return Map.copyOf(bytesBySalt);
        }
    }

    /** A snapshot of the counters. */
    public MpStoreStats stats() {
        synchronized (mutex) {
            return new MpStoreStats(index.size() - writing, writing, orphans.size(), locked.size(), usedBytes, capacity,
                    pending.size(), evictions, refusedNoMemory, refusedPendingCap, expiredReadLocks, expiredWrites,
                    releaseUnderflows, staleReservations);
        }
    }

    /**
     * Frees every object, pending or locked, and the arena. Clients must have stopped: their
     * slots are gone. Idempotent.
     */
    @Override
    public void close() {
        synchronized (mutex) {
            if (closed) {
                return;
            }
            closed = true;
            for (Entry entry : new ArrayList<>(index.values())) {
                entry.memory.release();
            }
            for (Entry entry : orphans) {
                entry.memory.release();
            }
            index.clear();
            lru.clear();
            locked.clear();
            orphans.clear();
            pending.clear();
            bytesBySalt.clear();
            writing = 0;
            usedBytes = 0;
            allocator.close();
        }
    }

    // ---- internals (under the lock) -----------------------------------------------------------

    private int prefix(List<MpObjectKey> keys, int ranks, long now, int readers) {
        checkKeys(keys);
        if (ranks < 1 || keys.size() % ranks != 0) {
            throw new IllegalArgumentException(keys.size() + " keys are not a whole number of chunks of " + ranks + " rank(s)");
        }
        int chunks = keys.size() / ranks;
        for (int c = 0; c < chunks; c++) {
            for (int r = 0; r < ranks; r++) {
                Entry entry = index.get(keys.get(c * ranks + r));
                if (entry == null || entry.state != State.READY) {
                    return c;
                }
                expireIfDue(entry, now);
                if (entry.readers + (long) readers * keys.size() > MAX_READERS) {
                    return c; // a key repeated in the list is locked every time: stop well before overflow
                }
            }
        }
        return chunks;
    }

    private static int checkedReaders(int readersPerObject) {
        if (readersPerObject < 0 || readersPerObject > MAX_READERS_PER_LOOKUP) {
            throw new IllegalArgumentException("readers per object must be 0.." + MAX_READERS_PER_LOOKUP + ", was " + readersPerObject);
        }
        return Math.max(1, readersPerObject);
    }

    private static void checkKeys(List<MpObjectKey> keys) {
        Objects.requireNonNull(keys, "keys");
        for (MpObjectKey key : keys) {
            Objects.requireNonNull(key, "a key is null");
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("the MP object store is closed");
        }
    }

    private boolean takePending(WriteReservation reservation) {
        Objects.requireNonNull(reservation, "reservation");
        if (!pending.take(reservation)) {
            if (!reservation.isEmpty()) {
                staleReservations++;
            }
            return false;
        }
        return true;
    }

    /** Frees a reservation no longer pending that will never be published. */
    private void dropEntries(WriteReservation reservation) {
        for (Entry entry : reservation.entries) {
            writing--;
            if (!entry.indexed) {
                orphans.remove(entry);
            }
            free(entry);
        }
    }

    private int expireDue(long now) {
        int expired = 0;
        for (Entry entry : new ArrayList<>(locked)) {
            if (expireIfDue(entry, now)) {
                expired++;
            }
        }
        for (WriteReservation reservation : pending.due(now)) {
            takePending(reservation);
            expiredWrites++;
            dropEntries(reservation);
            expired++;
        }
        return expired;
    }

    private boolean expireIfDue(Entry entry, long now) {
        if (entry.readers == 0 || now - entry.lockDeadline < 0) {
            return false;
        }
        expiredReadLocks += entry.readers;
        entry.readers = 0;
        unlocked(entry);
        return true;
    }

    /** The entry's last read lock went: it becomes evictable, or an orphan's memory goes back. */
    private void unlocked(Entry entry) {
        locked.remove(entry);
        if (entry.indexed) {
            lru.put(entry.key, entry);
        } else if (entry.state == State.READY) {
            orphans.remove(entry);
            free(entry);
        }
    }

    private Entry lockedOrphan(MpObjectKey key, long now) {
        for (Entry entry : new ArrayList<>(orphans)) {
            if (entry.key.equals(key) && entry.readers > 0 && !expireIfDue(entry, now)) {
                return entry;
            }
        }
        return null;
    }

    private void evict(Entry entry) {
        evictions++;
        free(entry);
    }

    private void unindex(Entry entry) {
        index.remove(entry.key);
        lru.remove(entry.key);
        entry.indexed = false;
        long bytes = entry.memory.physicalSize();
        bytesBySalt.computeIfPresent(entry.key.cacheSalt(), (s, b) -> b == bytes ? null : b - bytes);
    }

    /** Returns the entry's memory to the allocator and forgets it. Never called on a locked or writing entry except by its own write path. */
    private void free(Entry entry) {
        if (entry.indexed) {
            unindex(entry);
        }
        usedBytes -= entry.memory.physicalSize();
        entry.memory.release();
    }

    /**
     * Checks every invariant: index, LRU, lock set, orphans and salts agree; live slots lie in the
     * pool and never overlap; used bytes equal the live objects' and the allocator's. For tests.
     */
    void checkInvariants() {
        synchronized (mutex) {
            List<Entry> live = new ArrayList<>(index.values());
            live.addAll(orphans);
            long sum = 0;
            long writingCount = 0;
            Map<String, Long> salts = new HashMap<>();
            for (Entry entry : index.values()) {
                require(entry.indexed, "indexed entry flagged orphan " + entry.key);
                salts.merge(entry.key.cacheSalt(), entry.memory.physicalSize(), Long::sum);
                boolean evictable = entry.state == State.READY && entry.readers == 0;
                require(evictable == lru.containsKey(entry.key), "LRU membership wrong for " + entry.key);
                require(entry.state == State.READY || entry.readers == 0, "a writing object is read-locked " + entry.key);
            }
            for (Entry entry : orphans) {
                require(!entry.indexed, "orphan still indexed " + entry.key);
                require(entry.readers > 0 || entry.state == State.WRITING, "orphan holds nothing " + entry.key);
            }
            for (Entry entry : live) {
                sum += entry.memory.physicalSize();
                if (entry.state == State.WRITING) {
                    writingCount++;
                }
                require(entry.readers >= 0, "negative readers");
                require((entry.readers > 0) == locked.contains(entry), "lock set wrong for " + entry.key);
                long offset = entry.memory.address();
                require(offset >= 0 && offset + entry.memory.physicalSize() <= capacity, "slot outside the pool");
                require(entry.memory.segment().address() - arena.segment().address() == offset, "offset is not relative to the pool");
            }
            live.sort((a, b) -> Long.compare(a.memory.address(), b.memory.address()));
            for (int i = 1; i < live.size(); i++) {
                Entry prev = live.get(i - 1);
                require(prev.memory.address() + prev.memory.physicalSize() <= live.get(i).memory.address(), "slots overlap");
            }
            require(lru.size() <= index.size() && locked.size() <= live.size(), "tables larger than the objects");
            require(sum == usedBytes, "used bytes " + usedBytes + " != live objects' " + sum);
            require(sum == allocator.stats().usedBytes(), "allocator holds " + allocator.stats().usedBytes() + ", store " + sum);
            require(writingCount == writing, "writing count " + writing + " != " + writingCount);
            require(salts.equals(bytesBySalt), "salt usage " + bytesBySalt + " != " + salts);
            List<WriteReservation> reservations = pending.checkedAll();
            for (WriteReservation reservation : reservations) {
                for (Entry entry : reservation.entries) {
                    require(entry.state == State.WRITING, "pending reservation holds a published object");
                }
            }
            require(reservations.isEmpty() || writingCount > 0, "pending reservations without writing objects");
            allocator.memcheck();
        }
    }

    /** The slot of a ready object, without locking or touching it. For tests. */
    Optional<Slot> peek(MpObjectKey key) {
        synchronized (mutex) {
            Entry entry = index.get(key);
            return entry == null || entry.state != State.READY ? Optional.empty() : Optional.of(entry.slot(0));
        }
    }

    private static void require(boolean condition, String message) {
        if (!condition) {
            throw new IllegalStateException("MP store invariant broken: " + message);
        }
    }
}
