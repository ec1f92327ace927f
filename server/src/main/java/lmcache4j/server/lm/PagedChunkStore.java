package lmcache4j.server.lm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.paged.PagedTensorMemoryAllocator;

/**
 * The {@code lm://} cache server's own store: an LRU over one off-heap pool of
 * {@value #PAGE_BYTES}-byte pages. A PUT takes a page only when the bytes for it are arriving, so a
 * header that declares a huge payload and sends nothing costs nothing and evicts nothing; least
 * recently used entries are evicted page by page as real bytes arrive. A lease holds a reference on
 * its entry so that eviction or replacement meanwhile frees its pages only when the reply is sent.
 * Every entry is charged its pages plus {@value #ENTRY_CHARGE_BYTES} bytes against the pool, so
 * zero-length entries are bounded too, and there are at most {@code maxEntries}.
 */
public final class PagedChunkStore implements LmChunkStore {
    /** The payload pool's page: small enough that a partial page wastes little, large enough to read and write fast. */
    public static final int PAGE_BYTES = 64 * 1024;
    /** What an entry is charged beyond its pages: its key, metadata and bookkeeping. */
    public static final int ENTRY_CHARGE_BYTES = 512;

    /** One stored chunk: LMCache's 28 metadata bytes and the payload's pages, freed when the last reference goes. */
    private static final class Entry implements Lease {
        final byte[] metadata;
        final MemoryObj[] pages;
        final int length;
        final long charge;
        private final AtomicInteger refs = new AtomicInteger(1); // the map's

        Entry(byte[] metadata, MemoryObj[] pages, int length) {
            this.metadata = metadata;
            this.pages = pages;
            this.length = length;
            this.charge = (long) pages.length * PAGE_BYTES + ENTRY_CHARGE_BYTES;
        }

        long storedBytes() {
            return (long) metadata.length + length;
        }

        void retain() {
            refs.incrementAndGet();
        }

        void release() {
            if (refs.decrementAndGet() == 0) {
                for (MemoryObj p : pages) {
                    p.release();
                }
            }
        }

        @Override
        public byte[] metadata() {
            return metadata;
        }

        /** The payload as buffers over the pages, the last one cut to the payload's end. */
        @Override
        public ByteBuffer[] payload() {
            ByteBuffer[] out = new ByteBuffer[pages.length];
            long left = length;
            for (int i = 0; i < pages.length; i++) {
                long n = Math.min(PAGE_BYTES, left);
                out[i] = pages[i].segment().asSlice(0, n).asByteBuffer();
                left -= n;
            }
            return out;
        }

        @Override
        public long length() {
            return length;
        }

        /** A lease's own reference (each lease is a retain of the entry). */
        @Override
        public void close() {
            release();
        }
    }

    private final PagedTensorMemoryAllocator pool;
    /** The pool's bytes: what all entries and arriving PUTs may be charged. */
    private final long capacity;
    private final long maxEntries;
    private final LinkedHashMap<String, Entry> lru = new LinkedHashMap<>(16, 0.75f, true);
    private long chargedBytes; // guarded by lru: the entries' charges
    private long arrivingBytes; // guarded by lru: pages held by PUTs still receiving
    private long storedBytes; // guarded by lru
    private final AtomicLong evictions = new AtomicLong();

    private PagedChunkStore(PagedTensorMemoryAllocator pool, long maxEntries) {
        this.pool = pool;
        this.capacity = pool.stats().capacityBytes();
        this.maxEntries = maxEntries;
    }

    /**
     * Reserves a pool of {@code maxBytes} (rounded up to whole pages; anonymous memory, faulted in as
     * it is used).
     *
     * @throws IOException when the pool cannot be reserved, saying how big it was
     */
    public static PagedChunkStore reserve(long maxBytes, long maxEntries) throws IOException {
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("the maximum size must be > 0 bytes, was " + maxBytes);
        }
        if (maxEntries < 1) {
            throw new IllegalArgumentException("the maximum number of entries must be >= 1, was " + maxEntries);
        }
        long poolBytes = Math.ceilDiv(maxBytes, PAGE_BYTES) * PAGE_BYTES;
        if (poolBytes / PAGE_BYTES > Integer.MAX_VALUE) {
            throw new IOException("cannot reserve the lm:// server's payload pool of " + maxBytes + " bytes: one pool holds at"
                    + " most 2^31 - 1 pages of " + PAGE_BYTES + " bytes (128 TiB); lower the maximum size");
        }
        try {
            // Not CUDA-pinned: the server only moves bytes between sockets and memory.
            return new PagedChunkStore(PagedTensorMemoryAllocator.create("lm-server", HostArena.allocate(poolBytes,
                    HostArenaOptions.DEFAULT.withCudaPinned(false)), TensorShape.of(PAGE_BYTES), DType.UINT8), maxEntries);
        } catch (RuntimeException e) {
            // Typically ENOMEM: the kernel refuses to reserve more than the machine can back.
            throw new IOException("cannot reserve the lm:// server's payload pool of " + maxBytes + " bytes ("
                    + String.format(Locale.ROOT, "%.1f GiB", maxBytes / (double) (1L << 30))
                    + "; lower the maximum size): " + e.getMessage(), e);
        }
    }

    @Override
    public boolean exists(String key) {
        synchronized (lru) {
            return lru.containsKey(key);
        }
    }

    @Override
    public Optional<Lease> lease(String key) {
        synchronized (lru) {
            Entry e = lru.get(key);
            if (e == null) {
                return Optional.empty();
            }
            e.retain(); // the reply's own reference: eviction cannot free the pages meanwhile
            return Optional.of(e);
        }
    }

    @Override
    public boolean put(String key, byte[] metadata, int length, PayloadSource source) throws IOException {
        int pageCount = (int) Math.ceilDiv((long) length, PAGE_BYTES);
        long charge = (long) pageCount * PAGE_BYTES + ENTRY_CHARGE_BYTES;
        if (charge > capacity || !reserve(ENTRY_CHARGE_BYTES)) { // could never fit: evict nothing for it
            source.skip(length);
            return false;
        }
        MemoryObj[] pages = new MemoryObj[pageCount];
        int held = 0;
        boolean arrived = false;
        try {
            long left = length;
            while (held < pageCount) {
                // A page is taken only now that its bytes are arriving: nothing is evicted for bytes never sent.
                Optional<MemoryObj> page = takePage();
                if (page.isEmpty()) {
                    source.skip(left);
                    return false;
                }
                MemoryObj p = page.get();
                pages[held++] = p;
                int n = (int) Math.min(PAGE_BYTES, left);
                source.readFully(p.segment().asSlice(0, n).asByteBuffer());
                left -= n;
            }
            arrived = true;
        } finally {
            if (!arrived) { // refused, or the connection failed mid-payload
                giveBack(pages, held);
            }
        }
        commit(key, new Entry(metadata, pages, length));
        return true;
    }

    @Override
    public boolean remove(String key) {
        synchronized (lru) {
            Entry e = lru.remove(key);
            if (e != null) {
                forget(e);
            }
            return e != null;
        }
    }

    @Override
    public Occupancy occupancy() {
        long used = pool.stats().usedBytes();
        synchronized (lru) {
            return new Occupancy(lru.size(), storedBytes, used, chargedBytes, evictions.get());
        }
    }

    /** Drops every entry and releases the pool; a lease still open keeps its pages, and the pool's close reports them. */
    @Override
    public void close() {
        synchronized (lru) {
            lru.values().forEach(Entry::release);
            lru.clear();
            chargedBytes = 0;
            storedBytes = 0;
        }
        pool.close();
    }

    /** Reserves {@code bytes} of the budget for a PUT arriving, evicting while it does not fit; false when it cannot. */
    private boolean reserve(long bytes) {
        synchronized (lru) {
            while (chargedBytes + arrivingBytes + bytes > capacity) {
                if (!evictEldest()) {
                    return false;
                }
            }
            arrivingBytes += bytes;
            return true;
        }
    }

    /** One page for a PUT still receiving, evicting least recently used entries while it does not fit. */
    private Optional<MemoryObj> takePage() {
        synchronized (lru) {
            while (true) {
                if (chargedBytes + arrivingBytes + PAGE_BYTES <= capacity) {
                    Optional<MemoryObj> page = pool.allocate(TensorShape.of(PAGE_BYTES), DType.UINT8, MemoryFormat.BINARY);
                    if (page.isPresent()) {
                        arrivingBytes += PAGE_BYTES;
                        return page;
                    }
                    // the budget allows it but GETs still hold evicted entries' pages: evict more
                }
                if (!evictEldest()) {
                    return Optional.empty(); // what is left belongs to other PUTs arriving or to GETs in progress
                }
            }
        }
    }

    /** Returns what a PUT that will not be stored holds: its pages and its entry's reserved charge. */
    private void giveBack(MemoryObj[] pages, int held) {
        synchronized (lru) {
            arrivingBytes -= (long) held * PAGE_BYTES + ENTRY_CHARGE_BYTES;
        }
        for (int i = 0; i < held; i++) {
            pages[i].release();
        }
    }

    /** Stores a complete entry (its charge was reserved as it arrived), replacing any older one, then evicts while over the entry limit. */
    private void commit(String key, Entry entry) {
        synchronized (lru) {
            arrivingBytes -= entry.charge;
            Entry old = lru.put(key, entry);
            if (old != null) {
                forget(old);
            }
            chargedBytes += entry.charge;
            storedBytes += entry.storedBytes();
            while (lru.size() > maxEntries) {
                evictEldest();
            }
        }
    }

    /** Evicts the least recently used entry; false when there is none. Caller holds the lru lock. */
    private boolean evictEldest() {
        Iterator<Map.Entry<String, Entry>> it = lru.entrySet().iterator();
        if (!it.hasNext()) {
            return false;
        }
        Entry victim = it.next().getValue();
        it.remove();
        forget(victim);
        evictions.incrementAndGet();
        return true;
    }

    /** Takes an entry out of the accounting and drops the map's reference. Caller holds the lru lock. */
    private void forget(Entry e) {
        chargedBytes -= e.charge;
        storedBytes -= e.storedBytes();
        e.release();
    }
}
