package lmcache4j.engine.storage.disk;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.Prefetching;
import lmcache4j.engine.storage.internal.ResidencyIndex;
import lmcache4j.engine.storage.ResidencyListener;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.policy.CachePolicies;

/**
 * The local disk tier (LMCache's {@code LocalDiskBackend}, spec §3.5, made restartable): one
 * self-describing file per chunk under {@code local_disk}, at most {@code max_local_disk_size}
 * bytes, evicted by the configured policy. Puts are written asynchronously by a small pool of I/O
 * threads (prefetch before delete before put); when the put queue is full a store skips the disk
 * tier (counted) instead of waiting. Reads allocate from the {@link MemoryProvider} the tier is given
 * (the CPU tier's memory, as in LMCache); the storage manager writes what they return into the CPU
 * tier. The tier can load chunks ahead of a retrieve ({@link Prefetching}).
 *
 * <p>On start the index is rebuilt from the directory: partial and corrupt files of the cache are
 * removed and counted; files it did not write are left alone and counted. Every complete file with a
 * sound header is a cached chunk again once a background check ({@link #verification()}) has read
 * its payload and matched its CRC32C: until then lookups do not see it, so a file corrupted while
 * the cache was down is never promised. A read whose checksum does not match (a file gone bad since)
 * is a miss that deletes the file and is counted in {@link Stats#corruptReads()}, never corrupt KV.
 */
public final class LocalDiskBackend implements StorageBackend, Prefetching {
    /** LMCache's backend name. */
    public static final String NAME = "LocalDiskBackend";
    private static final System.Logger LOG = System.getLogger(LocalDiskBackend.class.getName());

    /** What the tier knows of one file. */
    private static final class Entry {
        final ChunkFileHeader header;
        final Path path;
        final long bytes;
        /** Lookups and reads holding the file; a pinned file is not evicted. */
        private int pins;

        Entry(ChunkFileHeader header, Path path, long bytes) {
            this.header = header;
            this.path = path;
            this.bytes = bytes;
        }

        void pin() {
            pins++;
        }

        boolean unpin() {
            if (pins == 0) {
                return false;
            }
            pins--;
            return true;
        }

        boolean unpinned() {
            return pins == 0;
        }
    }

    private final ChunkFiles files;
    private final MemoryProvider memory;
    private final long capacity;
    private final ReentrantLock lock;
    private final ResidencyIndex<Entry> index;
    /** Recovered chunks whose payload the verifier has not checked yet: on disk and counted, not offered. */
    private final Map<CacheKey, Entry> unverified = new HashMap<>();
    private final Set<CacheKey> putsInFlight = ConcurrentHashMap.newKeySet();
    private final IoExecutor io;
    private long usedBytes;
    private long reservedBytes;
    private boolean closed;

    private final LongAdder writes = new LongAdder();
    private final LongAdder reads = new LongAdder();
    private final LongAdder droppedPuts = new LongAdder();
    private final LongAdder rejectedPuts = new LongAdder();
    private final LongAdder ioFailures = new LongAdder();
    private final LongAdder corruptReads = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final LongAdder corruptOnVerify = new LongAdder();
    private final RecoveryReport recovery;
    private final RecoveredChunkVerifier verifier;

    /**
     * Opens the tier over {@code files}' directory, recovering what a previous process left there:
     * every recovered chunk file's payload is checked before this returns (see
     * {@link #LocalDiskBackend(ChunkFiles, MemoryProvider, long, String, int, int, boolean)}).
     *
     * @param memory        where reads allocate the objects they return
     * @param capacityBytes {@code max_local_disk_size} in bytes
     * @param cachePolicy   {@code cache_policy}
     * @param ioThreads     I/O threads
     * @param maxQueuedPuts puts that may wait for the disk before stores skip this tier
     */
    public LocalDiskBackend(ChunkFiles files, MemoryProvider memory, long capacityBytes, String cachePolicy, int ioThreads,
                            int maxQueuedPuts) throws IOException {
        this(files, memory, capacityBytes, cachePolicy, ioThreads, maxQueuedPuts, false);
    }

    /**
     * As {@link #LocalDiskBackend(ChunkFiles, MemoryProvider, long, String, int, int)}, choosing
     * when the recovered files' payloads are checked. Either way a chunk is offered only once its
     * payload matched its CRC32C. By default ({@code verifyInBackground} false) the constructor
     * waits for the check, which reads the whole directory once (0.6 to 0.9 GB/s measured with
     * O_DIRECT on a shared virtio disk): the tier starts with every sound chunk. In the background, the tier starts at once
     * and its recovered chunks become hits as they are checked ({@link #awaitVerification()}).
     */
    public LocalDiskBackend(ChunkFiles files, MemoryProvider memory, long capacityBytes, String cachePolicy, int ioThreads,
                            int maxQueuedPuts, boolean verifyInBackground) throws IOException {
        this.files = Objects.requireNonNull(files, "files");
        this.memory = Objects.requireNonNull(memory, "memory");
        if (capacityBytes <= 0) {
            throw new IllegalArgumentException("max_local_disk_size must be positive, was " + capacityBytes + " bytes");
        }
        this.capacity = capacityBytes;
        this.index = new ResidencyIndex<>(CachePolicies.forChunks(cachePolicy), Entry::pin, Entry::unpin, Entry::unpinned);
        this.lock = index.lock();
        this.recovery = files.recover();
        List<RecoveredChunk> kept = new ArrayList<>();
        for (RecoveredChunk chunk : recovery.chunks()) {
            if (usedBytes + chunk.fileBytes() > capacity) {
                files.delete(chunk.path()); // a smaller capacity than last time: keep what fits
                continue;
            }
            unverified.put(chunk.key(), new Entry(chunk.header(), chunk.path(), chunk.fileBytes()));
            usedBytes += chunk.fileBytes();
            kept.add(chunk);
        }
        this.io = new IoExecutor("disk", ioThreads, maxQueuedPuts);
        long keptBytes = usedBytes;
        LOG.log(Level.INFO, () -> NAME + ": " + kept.size() + " chunk file(s), " + keptBytes + " bytes recovered, offered "
                + "as a background check verifies their payloads; removed " + recovery.removedPartial() + " partial and "
                + recovery.removedCorrupt() + " corrupt file(s); left " + recovery.foreign() + " foreign entr(ies) alone; "
                + (files.directIo() ? "O_DIRECT" : "buffered") + " I/O");
        this.verifier = new RecoveredChunkVerifier(files, kept, new VerifierListener());
        if (!verifyInBackground) {
            try {
                awaitVerification();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // the check goes on in the background
                LOG.log(Level.WARNING, NAME + ": interrupted while checking recovered chunk files; the rest are checked "
                        + "in the background");
            }
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void setResidencyListener(ResidencyListener listener) {
        index.setListener(NAME, listener);
    }

    @Override
    public Optional<List<CacheKey>> residentKeys() {
        return Optional.of(index.keys());
    }

    /** What the start-up scan found. */
    public RecoveryReport recovery() {
        return recovery;
    }

    /** How far the background check of the recovered chunk files' payloads is. */
    public VerificationProgress verification() {
        return verifier.progress();
    }

    /**
     * Waits until every recovered chunk file has been checked (and, if sound, offered), or the tier
     * was closed. Returns at once unless the tier verifies in the background.
     */
    public void awaitVerification() throws InterruptedException {
        verifier.await(Long.MAX_VALUE, TimeUnit.NANOSECONDS);
    }

    /** Moves a recovered chunk from unverified to offered, or drops it, as its check says. */
    private final class VerifierListener implements RecoveredChunkVerifier.Listener {
        @Override
        public boolean wanted(RecoveredChunk chunk) {
            lock.lock();
            try {
                Entry e = unverified.get(chunk.key());
                return !closed && e != null && e.path.equals(chunk.path());
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void verified(RecoveredChunk chunk) {
            lock.lock();
            try {
                Entry e = unverified.remove(chunk.key());
                if (e != null) {
                    index.put(chunk.key(), e);
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void rejected(RecoveredChunk chunk, Exception why, boolean corrupt) {
            Entry e;
            lock.lock();
            try {
                e = unverified.remove(chunk.key());
                if (e != null) {
                    usedBytes -= e.bytes;
                }
            } finally {
                lock.unlock();
            }
            if (e == null) {
                return; // removed meanwhile
            }
            if (corrupt) {
                corruptOnVerify.increment();
                LOG.log(Level.WARNING, "disk tier removed a chunk file that went bad while the cache was down (never "
                        + "offered): " + why.getMessage());
            } else {
                ioFailures.increment();
                LOG.log(Level.WARNING, "disk tier could not check a recovered chunk file, dropped: " + why.getMessage());
            }
            deleteQuietly(e.path);
        }
    }

    // ---- lookups ----------------------------------------------------------------------------

    @Override
    public boolean contains(CacheKey key, boolean pin) {
        return index.contains(key, pin);
    }

    @Override
    public boolean unpin(CacheKey key) {
        return index.unpin(key);
    }

    @Override
    public void touchCache() {
        index.touch();
    }

    // ---- put --------------------------------------------------------------------------------

    /** Queues a write for each key not yet on disk; the caller's references stay the caller's. */
    @Override
    public void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
        if (keys.size() != objs.size()) {
            throw new IllegalArgumentException(keys.size() + " keys but " + objs.size() + " objects");
        }
        for (int i = 0; i < keys.size(); i++) {
            CacheKey key = keys.get(i);
            MemoryObj obj = objs.get(i);
            if (closedOrPresent(key) || !putsInFlight.add(key)) {
                continue;
            }
            obj.retain(); // the write job's reference
            if (!io.submit(IoExecutor.Priority.PUT, () -> write(key, obj))) {
                putsInFlight.remove(key);
                obj.release();
                droppedPuts.increment();
            }
        }
    }

    private boolean closedOrPresent(CacheKey key) {
        lock.lock();
        try {
            return closed || index.containsKey(key) || unverified.containsKey(key);
        } finally {
            lock.unlock();
        }
    }

    private void write(CacheKey key, MemoryObj obj) {
        long estimate = estimateFileBytes(obj);
        try {
            if (!reserve(estimate)) {
                rejectedPuts.increment();
                return;
            }
            long written;
            try {
                written = files.write(key, obj);
            } catch (IOException e) {
                unreserve(estimate);
                ioFailures.increment();
                LOG.log(Level.WARNING, "disk tier skipped a chunk: " + e.getMessage());
                return;
            }
            Path path = files.pathFor(key);
            Optional<ChunkFileHeader> header;
            try {
                header = files.readHeader(path);
            } catch (IOException e) {
                header = Optional.empty();
            }
            lock.lock();
            try {
                reservedBytes -= estimate;
                if (closed) {
                    return; // the file stays on disk for the next start
                }
                if (header.isEmpty()) {
                    ioFailures.increment();
                    LOG.log(Level.WARNING, "disk tier cannot read back the header it wrote to " + path);
                    return;
                }
                index.put(key, new Entry(header.get(), path, written));
                usedBytes += written;
                writes.increment(); // counted once servable: a reader that waits for the count finds the chunk
            } finally {
                lock.unlock();
            }
        } finally {
            putsInFlight.remove(key);
            obj.release();
        }
    }

    /** A file's size before it is written: a 4 KiB header and the payload in whole 4 KiB blocks. */
    private static long estimateFileBytes(MemoryObj obj) {
        return 4096 + (obj.byteSize() + 4095) / 4096 * 4096;
    }

    /** Makes room for {@code bytes} by evicting through the policy; false when not enough is evictable. */
    private boolean reserve(long bytes) {
        List<Path> toDelete = new ArrayList<>();
        boolean ok;
        lock.lock();
        try {
            while (usedBytes + reservedBytes + bytes > capacity) {
                Entry e = index.evictOne();
                if (e == null) {
                    break;
                }
                usedBytes -= e.bytes;
                evictions.increment();
                toDelete.add(e.path);
            }
            ok = usedBytes + reservedBytes + bytes <= capacity;
            if (ok) {
                reservedBytes += bytes;
            }
        } finally {
            lock.unlock();
        }
        toDelete.forEach(this::deleteQuietly);
        return ok;
    }

    private void unreserve(long bytes) {
        lock.lock();
        try {
            reservedBytes -= bytes;
        } finally {
            lock.unlock();
        }
    }

    // ---- get --------------------------------------------------------------------------------

    /**
     * Reads the chunk into a fresh object from the memory provider (waiting for memory as retrieves do), with a
     * reference for the caller. A missing, unreadable or corrupt file is a miss; a corrupt one is
     * deleted.
     */
    @Override
    public Optional<MemoryObj> getBlocking(CacheKey key) {
        return read(key, AllocationMode.EVICT_AND_WAIT);
    }

    @Override
    public Optional<Prefetching> prefetching() {
        return Optional.of(this);
    }

    /**
     * Reads {@code key} on an I/O thread ahead of a retrieve (prefetch priority, before deletes and
     * puts). Completes with the object and a reference for the caller, or empty when the chunk is
     * absent, unreadable, or the memory provider has no memory to spare right now (a prefetch never
     * waits for memory).
     */
    @Override
    public CompletableFuture<Optional<MemoryObj>> prefetch(CacheKey key) {
        CompletableFuture<Optional<MemoryObj>> result = new CompletableFuture<>();
        if (!io.submit(IoExecutor.Priority.PREFETCH, () -> {
            try {
                result.complete(read(key, AllocationMode.EVICT));
            } catch (RuntimeException e) { // read turns failures into misses; this is the last guard
                LOG.log(Level.WARNING, "disk tier prefetch of " + key + " failed, treated as a miss: " + e, e);
                result.complete(Optional.empty());
            }
        })) {
            result.complete(Optional.empty());
        }
        return result;
    }

    private Optional<MemoryObj> read(CacheKey key, AllocationMode mode) {
        Entry e;
        lock.lock();
        try {
            e = index.get(key);
            if (e == null || closed) {
                return Optional.empty();
            }
            e.pin(); // keeps the file from eviction while it is read
        } finally {
            lock.unlock();
        }
        MemoryObj obj = null;
        boolean ok = false;
        try {
            ChunkFileHeader h = e.header;
            // A wait for memory that times out is the retrieve's error to report, not a disk miss.
            Optional<MemoryObj> allocated = memory.allocate(h.shape(), h.dtype(), h.format(), mode);
            if (allocated.isEmpty()) {
                return Optional.empty();
            }
            obj = allocated.get();
            ok = readInto(key, e, obj);
            return ok ? Optional.of(obj) : Optional.empty();
        } finally {
            if (!ok && obj != null) {
                obj.release();
            }
            lock.lock();
            try {
                e.unpin();
            } finally {
                lock.unlock();
            }
        }
    }

    /** Reads {@code e}'s payload into {@code obj}; any failure is a counted miss that drops the entry. */
    private boolean readInto(CacheKey key, Entry e, MemoryObj obj) {
        try {
            files.readPayload(e.path, e.header, obj);
            reads.increment();
            return true;
        } catch (CorruptChunkException ex) {
            corruptReads.increment();
            LOG.log(Level.WARNING, "disk tier dropped a corrupt chunk (a counted miss, its KV is recomputed; no bad byte "
                    + "was served): " + ex.getMessage());
            drop(key, e, true);
        } catch (IOException ex) {
            ioFailures.increment();
            LOG.log(Level.WARNING, "disk tier read failed, treated as a miss: " + ex.getMessage());
            drop(key, e, true);
        } catch (RuntimeException ex) {
            // Not proven corrupt, so the file stays for the next start; this process stops offering it.
            ioFailures.increment();
            LOG.log(Level.WARNING, "disk tier read of " + e.path + " failed, treated as a miss: " + ex, ex);
            drop(key, e, false);
        }
        return false;
    }

    private void drop(CacheKey key, Entry e, boolean deleteFile) {
        lock.lock();
        try {
            if (index.remove(key, e)) {
                usedBytes -= e.bytes;
            }
        } finally {
            lock.unlock();
        }
        if (deleteFile) {
            deleteQuietly(e.path);
        }
    }

    // ---- removal ----------------------------------------------------------------------------

    @Override
    public boolean remove(CacheKey key) {
        Entry e;
        lock.lock();
        try {
            e = index.remove(key);
            if (e == null) {
                e = unverified.remove(key); // not offered yet, but on disk and counted
                if (e == null) {
                    return false;
                }
            }
            usedBytes -= e.bytes;
        } finally {
            lock.unlock();
        }
        Path path = e.path;
        if (!io.submit(IoExecutor.Priority.DELETE, () -> deleteQuietly(path))) {
            deleteQuietly(path);
        }
        return true;
    }

    @Override
    public long clear() {
        List<CacheKey> victims = new ArrayList<>();
        lock.lock();
        try {
            victims.addAll(index.evictableKeys());
            victims.addAll(unverified.keySet());
        } finally {
            lock.unlock();
        }
        long tokens = 0;
        for (CacheKey key : victims) {
            Entry e;
            lock.lock();
            try {
                e = index.containsKey(key) ? index.get(key) : unverified.get(key);
            } finally {
                lock.unlock();
            }
            if (e != null && remove(key)) {
                tokens += e.header.format().tokenCount(e.header.shape());
            }
        }
        return tokens;
    }

    private void deleteQuietly(Path path) {
        try {
            files.delete(path);
        } catch (IOException e) {
            ioFailures.increment();
            LOG.log(Level.WARNING, "disk tier could not delete " + path + ": " + e.getMessage());
        }
    }

    // ---- accounting -------------------------------------------------------------------------

    /**
     * A snapshot of the tier's counters.
     *
     * @param chunks           chunks offered (verified or written by this process)
     * @param usedBytes        bytes of the tier's files on disk, unverified ones included
     * @param capacityBytes    {@code max_local_disk_size}
     * @param writes           chunk files written and indexed (counted once a lookup finds them)
     * @param reads            chunks read back, checksum matched
     * @param droppedPuts      stores that skipped the tier: put queue full
     * @param rejectedPuts     stores that skipped the tier: nothing evictable to make room
     * @param ioFailures       writes, reads, checks and deletes that failed (each a miss or a skipped store)
     * @param corruptReads     chunk files that failed their check when read (payload CRC32C, a header
     *                         unsound or changed, a truncation): each a miss whose file was removed and
     *                         whose KV the engine recomputes; no byte of it is served
     * @param evictions        chunks evicted to make room
     * @param directIo         whether O_DIRECT is used
     * @param corruptOnVerify  recovered chunk files whose payload failed the background check: removed,
     *                         never offered
     * @param unverifiedChunks recovered chunk files still waiting for that check (not offered yet)
     */
    public record Stats(int chunks, long usedBytes, long capacityBytes, long writes, long reads, long droppedPuts,
                        long rejectedPuts, long ioFailures, long corruptReads, long evictions, boolean directIo,
                        long corruptOnVerify, int unverifiedChunks) {
    }

    public Stats stats() {
        lock.lock();
        try {
            return new Stats(index.size(), usedBytes, capacity, writes.sum(), reads.sum(), droppedPuts.sum(),
                    rejectedPuts.sum(), ioFailures.sum(), corruptReads.sum(), evictions.sum(), files.directIo(),
                    corruptOnVerify.sum(), unverified.size());
        } finally {
            lock.unlock();
        }
    }

    /** The disk tier's metrics, under LMCache's names where it has them. */
    @Override
    public void publishMetrics(EngineMetrics metrics) {
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:local_storage_usage",
                "Bytes of chunk files in the disk tier", false, () -> stats().usedBytes()));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:local_disk_write_count",
                "Chunks written to disk (lmcache4j)", true, writes::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:local_disk_read_count",
                "Chunks read from disk (lmcache4j)", true, reads::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:local_disk_evict_count",
                "Disk-tier evictions (lmcache4j)", true, evictions::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:local_disk_dropped_puts",
                "Stores that skipped the disk tier: queue full (lmcache4j)", true, droppedPuts::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:local_disk_corrupt_reads",
                "Chunk files dropped for a checksum mismatch (lmcache4j)", true, corruptReads::sum));
    }

    /** Waits until every queued put has been written (or dropped); for tests and orderly shutdown. */
    public void awaitPuts() throws InterruptedException {
        while (!putsInFlight.isEmpty()) {
            Thread.sleep(1);
        }
    }

    /** Finishes queued work, stops the I/O threads and forgets the index; the files stay for the next start. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
        } finally {
            lock.unlock();
        }
        verifier.close();
        if (!io.close(30_000)) {
            LOG.log(Level.WARNING, NAME + " I/O threads did not stop within 30 s");
        }
    }
}
