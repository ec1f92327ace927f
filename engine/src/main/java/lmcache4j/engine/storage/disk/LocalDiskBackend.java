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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.engine.storage.policy.CachePolicies;
import lmcache4j.engine.storage.policy.CachePolicy;

/**
 * The local disk tier (LMCache's {@code LocalDiskBackend}, spec §3.5, made restartable): one
 * self-describing file per chunk under {@code local_disk}, at most {@code max_local_disk_size}
 * bytes, evicted by the configured policy. Puts are written asynchronously by a small pool of I/O
 * threads (prefetch before delete before put); when the put queue is full a store skips the disk
 * tier (counted) instead of waiting. Reads allocate through the CPU tier, as in LMCache.
 *
 * <p>On start the index is rebuilt from the directory: every complete, valid file is a cached chunk
 * again; partial, corrupt or foreign files are removed and counted. A read whose checksum does not
 * match is a miss that deletes the file, never corrupt KV.
 */
public final class LocalDiskBackend implements StorageBackend {
    /** LMCache's backend name. */
    public static final String NAME = "LocalDiskBackend";
    private static final System.Logger LOG = System.getLogger(LocalDiskBackend.class.getName());

    /** What the tier knows of one file. */
    private static final class Entry {
        final ChunkFileHeader header;
        final Path path;
        final long bytes;
        int pins;

        Entry(ChunkFileHeader header, Path path, long bytes) {
            this.header = header;
            this.path = path;
            this.bytes = bytes;
        }
    }

    private final ChunkFiles files;
    private final LocalCpuBackend cpu;
    private final long capacity;
    private final ReentrantLock lock = new ReentrantLock();
    private final Map<CacheKey, Entry> index = new HashMap<>();
    private final CachePolicy<CacheKey> policy;
    private final List<CacheKey> keysInRequest = new ArrayList<>();
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
    private final RecoveryReport recovery;

    /**
     * Opens the tier over {@code files}' directory, recovering what a previous process left there.
     *
     * @param cpu           the CPU tier that reads allocate through
     * @param capacityBytes {@code max_local_disk_size} in bytes
     * @param cachePolicy   {@code cache_policy}
     * @param ioThreads     I/O threads
     * @param maxQueuedPuts puts that may wait for the disk before stores skip this tier
     */
    public LocalDiskBackend(ChunkFiles files, LocalCpuBackend cpu, long capacityBytes, String cachePolicy, int ioThreads,
                            int maxQueuedPuts) throws IOException {
        this.files = Objects.requireNonNull(files, "files");
        this.cpu = Objects.requireNonNull(cpu, "cpu");
        if (capacityBytes <= 0) {
            throw new IllegalArgumentException("max_local_disk_size must be positive, was " + capacityBytes + " bytes");
        }
        this.capacity = capacityBytes;
        this.policy = CachePolicies.create(cachePolicy);
        this.recovery = files.recover();
        for (RecoveredChunk chunk : recovery.chunks()) {
            if (usedBytes + chunk.fileBytes() > capacity) {
                files.delete(chunk.path()); // a smaller capacity than last time: keep what fits
                continue;
            }
            index.put(chunk.key(), new Entry(chunk.header(), chunk.path(), chunk.fileBytes()));
            policy.onPut(chunk.key());
            usedBytes += chunk.fileBytes();
        }
        this.io = new IoExecutor("lmcache4j-disk", ioThreads, maxQueuedPuts);
        LOG.log(Level.INFO, () -> NAME + ": " + index.size() + " chunk(s), " + usedBytes
                + " bytes recovered; removed " + recovery.removedPartial() + " partial and " + recovery.removedCorrupt()
                + " corrupt file(s); left " + recovery.foreign() + " foreign entr(ies) alone; "
                + (files.directIo() ? "O_DIRECT" : "buffered") + " I/O");
    }

    @Override
    public String name() {
        return NAME;
    }

    /** What the start-up scan found. */
    public RecoveryReport recovery() {
        return recovery;
    }

    // ---- lookups ----------------------------------------------------------------------------

    @Override
    public boolean contains(CacheKey key, boolean pin) {
        lock.lock();
        try {
            Entry e = index.get(key);
            if (e != null && pin) {
                e.pins++;
                keysInRequest.add(key);
            }
            return e != null;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean existsInPutTasks(CacheKey key) {
        return putsInFlight.contains(key);
    }

    @Override
    public boolean pin(CacheKey key) {
        lock.lock();
        try {
            Entry e = index.get(key);
            if (e != null) {
                e.pins++;
            }
            return e != null;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean unpin(CacheKey key) {
        lock.lock();
        try {
            Entry e = index.get(key);
            if (e == null || e.pins == 0) {
                return false;
            }
            e.pins--;
            return true;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void touchCache() {
        lock.lock();
        try {
            for (int i = keysInRequest.size() - 1; i >= 0; i--) {
                if (index.containsKey(keysInRequest.get(i))) {
                    policy.onHit(keysInRequest.get(i));
                }
            }
            keysInRequest.clear();
        } finally {
            lock.unlock();
        }
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
            return closed || index.containsKey(key);
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
            writes.increment();
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
                policy.onPut(key);
                usedBytes += written;
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
                List<CacheKey> victims = policy.evictionCandidates(1, k -> index.get(k).pins == 0);
                if (victims.isEmpty()) {
                    break;
                }
                Entry e = index.remove(victims.getFirst());
                policy.onRemove(victims.getFirst());
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
     * Reads the chunk into a fresh CPU-tier object (waiting for CPU memory as retrieves do), with a
     * reference for the caller. A missing, unreadable or corrupt file is a miss; a corrupt one is
     * deleted.
     */
    @Override
    public Optional<MemoryObj> getBlocking(CacheKey key) {
        return read(key, AllocationMode.EVICT_AND_WAIT);
    }

    /**
     * Reads {@code key} into the CPU tier on an I/O thread ahead of a retrieve (prefetch priority,
     * before deletes and puts). Completes with the object and a reference for the caller, or empty
     * when the chunk is absent, unreadable, or the CPU tier has no memory to spare right now (a
     * prefetch never waits for memory).
     */
    public java.util.concurrent.CompletableFuture<Optional<MemoryObj>> prefetch(CacheKey key) {
        java.util.concurrent.CompletableFuture<Optional<MemoryObj>> result = new java.util.concurrent.CompletableFuture<>();
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
            e.pins++; // keeps the file from eviction while it is read
        } finally {
            lock.unlock();
        }
        MemoryObj obj = null;
        boolean ok = false;
        try {
            ChunkFileHeader h = e.header;
            // A wait for CPU memory that times out is the retrieve's error to report, not a disk miss.
            Optional<MemoryObj> allocated = cpu.allocate(h.shape(), h.dtype(), h.format(), mode);
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
                e.pins--;
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
            if (index.get(key) == e) {
                index.remove(key);
                policy.onRemove(key);
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
                return false;
            }
            policy.onRemove(key);
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
        List<CacheKey> victims;
        lock.lock();
        try {
            victims = index.entrySet().stream().filter(en -> en.getValue().pins == 0).map(Map.Entry::getKey).toList();
        } finally {
            lock.unlock();
        }
        long tokens = 0;
        for (CacheKey key : victims) {
            Entry e;
            lock.lock();
            try {
                e = index.get(key);
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

    /** A snapshot of the tier's counters. */
    public record Stats(int chunks, long usedBytes, long capacityBytes, long writes, long reads, long droppedPuts,
                        long rejectedPuts, long ioFailures, long corruptReads, long evictions, boolean directIo) {
    }

    public Stats stats() {
        lock.lock();
        try {
            return new Stats(index.size(), usedBytes, capacity, writes.sum(), reads.sum(), droppedPuts.sum(),
                    rejectedPuts.sum(), ioFailures.sum(), corruptReads.sum(), evictions.sum(), files.directIo());
        } finally {
            lock.unlock();
        }
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
        if (!io.close(30_000)) {
            LOG.log(Level.WARNING, NAME + " I/O threads did not stop within 30 s");
        }
    }
}
