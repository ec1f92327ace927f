package lmcache4j.server.mp.tier;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.IntConsumer;
import java.util.function.LongFunction;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.RemoteConnectors;
import lmcache4j.engine.storage.Prefetching;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.disk.ChunkFiles;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.MpL2Stats;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.store.ObjectLayout;
import lmcache4j.server.mp.store.Slot;
import lmcache4j.server.mp.store.WriteReservation;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * The MP server's lower tiers (L2) behind its shared-memory pool: the engine's disk and remote
 * tiers, written through and loaded from.
 *
 * <p><b>Write-through.</b> {@link #published} read-locks the objects a commit published (so the pool
 * cannot reuse their slots) and queues them; one writer thread copies each into staging memory,
 * unlocks it, and puts the copy into every tier. A full queue or staging memory that stays full drops the
 * write, counted: memory stays within what the operator configured.
 *
 * <p><b>Prefetch.</b> {@link #prefetch} loads, off the loop thread, the leading chunks the tiers
 * hold of a lookup's continuation: it asks the tiers first (a miss allocates nothing), then per
 * chunk reserves its rank objects in the pool, reads them from the tiers, checks their size and
 * dtype, copies them in and publishes them, and finally read-locks the loaded prefix as a lookup
 * does. An error, a corrupt or short object, or the deadline ends the prefix there.
 *
 * <p>Copies into and out of the pool hold {@link #copies}' read lock; {@link #close} takes its
 * write lock, so no copy touches the pool after the store unmaps it.
 */
public final class MpLowerTiers implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(MpLowerTiers.class.getName());
    /** The pool owner of prefetch reservations (instance owners are numbers). */
    static final String OWNER = "l2-prefetch";
    /** Prefetch jobs at once; a lookup beyond that counts the pool's hits only. */
    public static final int MAX_JOBS = 64;
    private static final Duration JOIN_BOUND = Duration.ofSeconds(35);
    /** How long the writer waits for staging memory before it drops a write. */
    static final Duration STAGING_WAIT = Duration.ofSeconds(2);

    private record WriteJob(Slot slot, CacheEngineKey tierKey) {
    }

    private final MpObjectStore store;
    private final List<StorageBackend> tiers;
    private final StagingMemory staging;
    private final Duration prefetchTimeout;
    private final ArrayBlockingQueue<WriteJob> queue;
    private final OwnedThreads threads = new OwnedThreads();
    private final ExecutorService jobs = Executors.newThreadPerTaskExecutor(threads.virtualFactory("mp-l2-prefetch"));
    private final AtomicInteger jobsInFlight = new AtomicInteger();
    private final ReentrantReadWriteLock copies = new ReentrantReadWriteLock();
    private volatile boolean closing;

    private final LongAdder written = new LongAdder();
    private final LongAdder writeDrops = new LongAdder();
    private final LongAdder writeFailures = new LongAdder();
    private final LongAdder prefetchJobs = new LongAdder();
    private final LongAdder prefetchedObjects = new LongAdder();
    private final LongAdder prefetchFailures = new LongAdder();

    private MpLowerTiers(MpObjectStore store, List<StorageBackend> tiers, StagingMemory staging, MpL2Settings settings) {
        this.store = store;
        this.tiers = List.copyOf(tiers);
        this.staging = staging;
        this.prefetchTimeout = settings.prefetchTimeout();
        this.queue = new ArrayBlockingQueue<>(settings.writeQueue());
        threads.start("mp-l2-writer", this::writeLoop);
    }

    /** Over tiers this package's tests build (a real tier with a fault put in front of it). */
    static MpLowerTiers over(MpObjectStore store, List<StorageBackend> tiers, StagingMemory staging, MpL2Settings settings) {
        return new MpLowerTiers(store, tiers, staging, settings);
    }

    /**
     * Opens the configured tiers over {@code store}'s pool; empty when none is configured.
     *
     * @throws IOException when the disk directory cannot be opened or the remote store is unreachable or its URL bad
     */
    public static Optional<MpLowerTiers> open(MpL2Settings settings, MpObjectStore store) throws IOException {
        return open(settings, store, StagingMemory::new);
    }

    /** As {@link #open(MpL2Settings, MpObjectStore)}, staging in what {@code stagingOf} makes (tests see what a failed open let go of). */
    static Optional<MpLowerTiers> open(MpL2Settings settings, MpObjectStore store, LongFunction<StagingMemory> stagingOf)
            throws IOException {
        if (!settings.enabled()) {
            return Optional.empty();
        }
        StagingMemory staging = stagingOf.apply(settings.stagingBytes());
        List<StorageBackend> tiers = new ArrayList<>();
        try {
            if (settings.diskDir().isPresent()) {
                ChunkFiles files = new ChunkFiles(settings.diskDir().get(), false, false, false);
                tiers.add(new LocalDiskBackend(files, staging, settings.diskBytes(), "LRU", 2, settings.writeQueue()));
            }
            if (settings.remoteUrl().isPresent()) {
                double timeout = settings.prefetchTimeout().toMillis() / 1000.0;
                tiers.add(new RemoteBackend(RemoteConnectors.create(settings.remoteUrl().get()), staging, timeout, 5,
                        Math.min(timeout, 5)));
            }
        } catch (IOException | RuntimeException e) {
            tiers.forEach(StorageBackend::close);
            staging.close();
            if (e instanceof IOException io) {
                throw new IOException("cannot open the MP server's lower tier: " + io.getMessage(), io);
            }
            throw new IOException("cannot open the MP server's lower tier: " + e.getMessage(), e);
        }
        return Optional.of(new MpLowerTiers(store, tiers, staging, settings));
    }

    // ---- write-through ------------------------------------------------------------------------

    /** Queues the published objects of {@code keys} for the tiers (loop thread; never blocks). */
    public void published(List<MpObjectKey> keys, ObjectLayout layout) {
        if (closing) {
            return;
        }
        // Only the loop thread offers, so what fits now still fits below. Behind: the leading chunks
        // (the ones a prefix lookup needs first) go, the rest are dropped before anything is locked.
        int fits = Math.min(keys.size(), queue.remainingCapacity());
        writeDrops.add(keys.size() - fits);
        for (Slot slot : store.lockReady(keys.subList(0, fits))) {
            Optional<CacheEngineKey> tierKey = TierKeys.of(slot.key(), layout);
            if (tierKey.isEmpty() || !queue.offer(new WriteJob(slot, tierKey.get()))) {
                store.releaseRead(List.of(slot.key()));
                writeDrops.increment();
            }
        }
    }

    private void writeLoop() {
        while (!closing) {
            WriteJob job;
            try {
                job = queue.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                break;
            }
            if (job != null) {
                try {
                    write(job);
                } catch (RuntimeException e) {
                    writeFailures.increment();
                    LOG.log(System.Logger.Level.WARNING, "MP server: writing " + job.tierKey() + " to L2 failed: " + e);
                }
            }
        }
        for (WriteJob left; (left = queue.poll()) != null; ) {
            store.releaseRead(List.of(left.slot().key()));
        }
    }

    private void write(WriteJob job) {
        Slot slot = job.slot();
        MemoryObj copy;
        try {
            List<StorageBackend> targets = new ArrayList<>(tiers.size());
            for (StorageBackend tier : tiers) {
                if (!(tier.isLocal() && tier.contains(job.tierKey(), false))) {
                    targets.add(tier); // a local tier that holds it already is skipped without a copy
                }
            }
            if (targets.isEmpty()) {
                return;
            }
            Optional<MemoryObj> staged = stagingForWrite(slot.layout());
            if (staged.isEmpty()) {
                writeDrops.increment();
                return;
            }
            copy = staged.get();
            if (!copyGuarded(store.segment(), slot.offset(), copy.segment(), 0, slot.length())) {
                copy.release();
                return;
            }
            if (!store.stillHolds(slot)) { // the lock lapsed and the memory went to another object mid-copy
                copy.release();
                writeDrops.increment();
                return;
            }
            for (StorageBackend tier : targets) {
                try {
                    tier.batchedSubmitPut(List.of(job.tierKey()), List.of(copy));
                } catch (RuntimeException e) {
                    writeFailures.increment();
                }
            }
        } finally {
            store.releaseRead(List.of(slot.key()));
        }
        copy.release(); // the tiers hold their own references
        written.increment();
    }

    /**
     * Staging memory for one copy, waiting up to {@link #STAGING_WAIT} for the tiers to give some
     * back: a burst of stores then waits in the bounded queue for a disk that writes more slowly
     * than workers store, instead of being dropped. Only this writer thread waits; the loop never does.
     */
    private Optional<MemoryObj> stagingForWrite(ObjectLayout layout) {
        long deadline = System.nanoTime() + STAGING_WAIT.toNanos();
        Optional<MemoryObj> staged;
        while ((staged = staging.allocateForWrite(layout.shape(), layout.dtype())).isEmpty() && !closing
                && System.nanoTime() - deadline < 0) {
            LockSupport.parkNanos(1_000_000);
        }
        return staged;
    }

    // ---- prefetch -----------------------------------------------------------------------------

    /**
     * Starts loading {@code missing} (chunk-major, {@code ranks} keys per chunk: a lookup's keys from
     * the first chunk the pool lacks) from the tiers; {@code done} gets, on the job's thread, how
     * many leading chunks are now in the pool and read-locked {@code readers} times each.
     *
     * @return false, starting nothing, when too many jobs run already or the tiers are closing
     */
    public boolean prefetch(List<MpObjectKey> missing, int ranks, int readers, ObjectLayout layout, IntConsumer done) {
        if (closing || jobsInFlight.incrementAndGet() > MAX_JOBS) {
            jobsInFlight.decrementAndGet();
            return false;
        }
        prefetchJobs.increment();
        long deadline = System.nanoTime() + prefetchTimeout.toNanos();
        List<MpObjectKey> keys = List.copyOf(missing);
        try {
            jobs.execute(() -> {
                int chunks = 0;
                try {
                    chunks = load(keys, ranks, readers, layout, deadline);
                } catch (RuntimeException e) { // the store closed under the job, a tier failed unexpectedly
                    prefetchFailures.increment();
                    LOG.log(System.Logger.Level.WARNING, "MP server: a load from L2 failed; counted a miss: " + e);
                } finally {
                    jobsInFlight.decrementAndGet();
                    done.accept(chunks);
                }
            });
        } catch (RuntimeException e) { // the executor shut down
            jobsInFlight.decrementAndGet();
            return false;
        }
        return true;
    }

    private int load(List<MpObjectKey> keys, int ranks, int readers, ObjectLayout layout, long deadline) {
        List<CacheEngineKey> tierKeys = new ArrayList<>(keys.size());
        for (MpObjectKey key : keys) {
            Optional<CacheEngineKey> tierKey = TierKeys.of(key, layout);
            if (tierKey.isEmpty()) {
                break;
            }
            tierKeys.add(tierKey.get());
        }
        boolean[][] heldBy = new boolean[tiers.size()][];
        boolean[] held = new boolean[tierKeys.size()];
        for (int t = 0; t < heldBy.length; t++) {
            heldBy[t] = tiers.get(t).containsEach(tierKeys);
            for (int i = 0; i < held.length; i++) {
                held[i] |= heldBy[t][i];
            }
        }
        int available = 0;
        while ((available + 1) * ranks <= held.length && allHeld(held, available * ranks, ranks)) {
            available++;
        }
        int loaded = 0;
        try (Readahead ahead = new Readahead(tierKeys, heldBy, available * ranks, layout, deadline)) {
            while (loaded < available && !closing && System.nanoTime() - deadline < 0) {
                int from = loaded * ranks;
                WriteReservation reservation = store.reserveWrite(OWNER, keys.subList(from, from + ranks), layout);
                boolean ok = true;
                for (Slot slot : reservation.slots()) {
                    if (!fill(slot, ahead.take(from + slot.index()), deadline)) {
                        ok = false;
                        break;
                    }
                }
                if (!ok) {
                    store.abortWrite(reservation);
                    break;
                }
                if (!reservation.isEmpty() && !store.finishWrite(reservation)) {
                    break;
                }
                prefetchedObjects.add(reservation.slots().size());
                loaded++;
            }
        }
        if (loaded < available && !closing) {
            // One failure a load, whatever ended it short (an error, a corrupt object, the deadline), and only
            // once: a read that ran into the deadline used to count as a failed copy and as the deadline.
            prefetchFailures.increment();
        }
        return loaded == 0 ? 0 : store.prefixLockAllRanks(keys.subList(0, loaded * ranks), ranks, readers);
    }

    private static boolean allHeld(boolean[] held, int from, int count) {
        for (int i = from; i < from + count; i++) {
            if (!held[i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * Copies {@code object} (read from a tier, checked whole) into {@code slot} and releases it, unless
     * {@code deadline} has passed: the reservation outlives the deadline (the settings keep the
     * timeout under half the lock lifetime), so the copy never lands in memory it no longer owns.
     */
    private boolean fill(Slot slot, Optional<MemoryObj> object, long deadline) {
        if (object.isEmpty()) {
            return false;
        }
        MemoryObj obj = object.get();
        try {
            return System.nanoTime() - deadline < 0
                    && copyGuarded(obj.segment(), 0, store.segment(), slot.offset(), slot.length());
        } finally {
            obj.release();
        }
    }

    /**
     * A load's objects, read in order: the next {@link #DEPTH} are kept in flight on the I/O threads
     * of the tier that holds them (the disk tier's {@link Prefetching}), so reading the next object
     * overlaps copying this one into the pool. What the load does not take is released.
     */
    private final class Readahead implements AutoCloseable {
        static final int DEPTH = 2;

        /** One object being read ahead, and the tier reading it. */
        private record Ahead(CompletableFuture<Optional<MemoryObj>> read, String tier) {
        }

        private final List<CacheEngineKey> keys;
        private final boolean[][] heldBy;
        private final int limit;
        private final ObjectLayout layout;
        private final long deadline;
        private final TreeMap<Integer, Ahead> inFlight = new TreeMap<>();
        private int next;

        Readahead(List<CacheEngineKey> keys, boolean[][] heldBy, int limit, ObjectLayout layout, long deadline) {
            this.keys = keys;
            this.heldBy = heldBy;
            this.limit = limit;
            this.layout = layout;
            this.deadline = deadline;
        }

        /** Object {@code index} whole (its size and dtype checked), from the first tier that has it so; else empty. */
        Optional<MemoryObj> take(int index) {
            if (System.nanoTime() - deadline >= 0) {
                return Optional.empty(); // the copy would be refused anyway
            }
            while (!inFlight.isEmpty() && inFlight.firstKey() < index) {
                discard(inFlight.pollFirstEntry().getValue().read()); // already in the pool: not needed
            }
            for (next = Math.max(next, index); next < Math.min(limit, index + 1 + DEPTH); next++) {
                start(next);
            }
            Ahead ahead = inFlight.remove(index);
            if (ahead != null) {
                Optional<MemoryObj> got = whole(await(ahead.read()), ahead.tier());
                if (got.isPresent()) {
                    return got;
                }
            }
            for (StorageBackend tier : tiers) { // no read-ahead, or it came back empty: ask each tier in turn
                if (System.nanoTime() - deadline >= 0) {
                    break; // a read-ahead that timed out used the whole wait: another tier's would overrun it
                }
                try {
                    Optional<MemoryObj> got = whole(tier.getBlocking(keys.get(index)), tier.name());
                    if (got.isPresent()) {
                        return got;
                    }
                } catch (RuntimeException e) {
                    // an error is a miss in this tier
                }
            }
            return Optional.empty();
        }

        private void start(int index) {
            for (int t = 0; t < heldBy.length; t++) {
                if (heldBy[t][index]) {
                    StorageBackend tier = tiers.get(t);
                    tier.prefetching().ifPresent(p -> inFlight.put(index, new Ahead(p.prefetch(keys.get(index)), tier.name())));
                    return;
                }
            }
        }

        private Optional<MemoryObj> await(CompletableFuture<Optional<MemoryObj>> read) {
            long left = deadline - System.nanoTime();
            try {
                return read.get(Math.max(0, left), TimeUnit.NANOSECONDS);
            } catch (TimeoutException | ExecutionException e) {
                discard(read);
                return Optional.empty();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                discard(read);
                return Optional.empty();
            }
        }

        private Optional<MemoryObj> whole(Optional<MemoryObj> got, String from) {
            if (got.isPresent() && (got.get().byteSize() != layout.byteLength() || got.get().dtype() != layout.dtype())) {
                LOG.log(System.Logger.Level.WARNING, "MP server: " + from + " returned " + got.get().byteSize() + " bytes of "
                        + got.get().dtype() + ", expected " + layout.byteLength() + " of " + layout.dtype()
                        + "; treated as a miss");
                got.get().release();
                return Optional.empty();
            }
            return got;
        }

        private static void discard(CompletableFuture<Optional<MemoryObj>> read) {
            read.thenAccept(o -> o.ifPresent(MemoryObj::release));
        }

        @Override
        public void close() {
            inFlight.values().forEach(a -> discard(a.read()));
            inFlight.clear();
        }
    }

    /** Copies unless the tiers are closing (the pool may be unmapped next). */
    private boolean copyGuarded(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        copies.readLock().lock();
        try {
            if (closing) {
                return false;
            }
            MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes);
            return true;
        } finally {
            copies.readLock().unlock();
        }
    }

    // ---- state --------------------------------------------------------------------------------

    public MpL2Stats stats() {
        List<String> names = new ArrayList<>();
        long tierWrites = 0;
        for (StorageBackend tier : tiers) {
            switch (tier) {
                case LocalDiskBackend disk -> tierWrites += disk.stats().writes();
                case RemoteBackend remote -> tierWrites += remote.stats().puts();
                default -> { }
            }
            names.add(tier instanceof RemoteBackend remote ? tier.name() + " " + remote.url() : tier.name());
        }
        return new MpL2Stats(names, queue.size(), written.sum(), writeDrops.sum(), writeFailures.sum(), tierWrites,
                prefetchJobs.sum(), prefetchedObjects.sum(), prefetchFailures.sum(), staging.usedBytes());
    }

    /** The staging memory, for this package's tests of what a closed instance has let go of. */
    StagingMemory staging() {
        return staging;
    }

    /**
     * Stops the writer and the loads (waiting for those under way, which their deadline bounds), then
     * closes the tiers, which finish their queued writes (the disk keeps its files for the next start).
     * The store must still be open: the writer releases its locks.
     */
    @Override
    public void close() {
        if (closing) {
            return;
        }
        closing = true;
        copies.writeLock().lock(); // no copy is under way from now on
        copies.writeLock().unlock();
        jobs.shutdown();
        try {
            if (!jobs.awaitTermination(JOIN_BOUND.toSeconds(), TimeUnit.SECONDS)) {
                LOG.log(System.Logger.Level.WARNING, "MP server: L2 loads did not stop within " + JOIN_BOUND);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        threads.join(JOIN_BOUND);
        tiers.forEach(StorageBackend::close);
        staging.close();
    }
}
