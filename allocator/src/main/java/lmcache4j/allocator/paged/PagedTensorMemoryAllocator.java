package lmcache4j.allocator.paged;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.allocator.AllocatorLeakException;
import lmcache4j.allocator.AllocatorStats;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.internal.AllocationLedger;
import lmcache4j.allocator.internal.IdSequence;
import lmcache4j.allocator.internal.AllocatorChecks;
import lmcache4j.allocator.internal.LeakDetection;
import lmcache4j.allocator.internal.MemoryOwner;
import lmcache4j.allocator.internal.PoolLock;

/**
 * Fixed-size pages (LMCache spec §2.6): every page holds one full chunk; a partial last chunk
 * takes a whole page and sees only its own bytes. Free pages wait in a FIFO ring of page indices,
 * so allocate and free are O(1) and fragmentation cannot happen.
 *
 * <p>Unlike LMCache, pages are not pre-built objects that get reused: each allocation makes a
 * fresh {@link MemoryObj}, so a reference kept past release is caught instead of aliasing the
 * page's next owner. In strict mode each object gets its own arena, as in
 * {@link lmcache4j.allocator.tensor.TensorMemoryAllocator#strict}.
 */
public final class PagedTensorMemoryAllocator implements MemoryAllocator, MemoryOwner {
    private static final System.Logger LOG = System.getLogger(PagedTensorMemoryAllocator.class.getName());

    private final String name;
    private final long pageSize;
    /** log2(pageSize) when it is a power of two, else -1. */
    private final int pageShift;
    private final int pageCount;
    private final HostArena arena;
    /** The arena's segment, fetched once: slicing it is the allocation fast path. */
    private final MemorySegment region;
    private final PoolLock lock = new PoolLock();
    private final int[] ring;
    private int head;
    private int freePages;
    private final IdSequence ids = new IdSequence();
    private final AllocationLedger ledger;
    private final LongAdder pinned = new LongAdder();
    private long allocations;
    private long failedAllocations;
    private long leaksReclaimed;
    private boolean closed;

    private PagedTensorMemoryAllocator(String name, long pageSize, int pageCount, HostArena arena) {
        this.name = Objects.requireNonNull(name, "name");
        this.pageSize = pageSize;
        this.pageShift = Long.bitCount(pageSize) == 1 ? Long.numberOfTrailingZeros(pageSize) : -1;
        this.pageCount = pageCount;
        this.arena = arena;
        this.region = arena == null ? null : arena.segment();
        this.ring = new int[pageCount];
        this.ledger = AllocationLedger.dense(pageCount);
        for (int i = 0; i < pageCount; i++) {
            ring[i] = i;
        }
        this.freePages = pageCount;
    }

    /**
     * Pages of {@code pageShape × dtype} bytes over {@code arena}, which this allocator owns from
     * now on. The arena must hold a whole number of pages.
     */
    public static PagedTensorMemoryAllocator create(String name, HostArena arena, TensorShape pageShape, DType dtype) {
        long page = pageShape.byteSize(dtype);
        if (page <= 0) {
            throw new IllegalArgumentException("page shape " + pageShape + " is empty");
        }
        if (arena.byteSize() % page != 0) {
            throw new IllegalArgumentException("arena of " + arena.byteSize() + " bytes is not a whole number of "
                    + page + "-byte pages (" + pageShape + " of " + dtype.torchName() + ")");
        }
        return new PagedTensorMemoryAllocator(name, page, checkedPages(arena.byteSize() / page), arena);
    }

    /** Strict mode: {@code pageCount} virtual pages, each object backed by its own arena. */
    public static PagedTensorMemoryAllocator strict(String name, int pageCount, TensorShape pageShape, DType dtype) {
        long page = pageShape.byteSize(dtype);
        if (page <= 0 || pageCount <= 0) {
            throw new IllegalArgumentException("need a non-empty page shape and a positive page count, got "
                    + pageShape + " × " + pageCount);
        }
        return new PagedTensorMemoryAllocator(name, page, pageCount, null);
    }

    private static int checkedPages(long pages) {
        if (pages > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(pages + " pages are more than one allocator indexes");
        }
        return (int) pages;
    }

    @Override
    public String name() {
        return name;
    }

    /** Bytes per page. */
    public long pageSize() {
        return pageSize;
    }

    @Override
    public Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format) {
        long raw = checkedSize(shape, dtype, format);
        Throwable site = LeakDetection.siteIfRecording();
        MemoryObj obj;
        lock.lock();
        try {
            ensureOpen();
            if (freePages == 0) {
                failedAllocations++;
                return Optional.empty();
            }
            obj = newObject(pop(), raw, shape, dtype, format, site);
            allocations++;
        } finally {
            lock.unlock();
        }
        track(obj);
        return Optional.of(obj);
    }

    @Override
    public Optional<List<MemoryObj>> allocateBatch(TensorShape shape, DType dtype, MemoryFormat format, int count) {
        if (count <= 0) {
            throw new IllegalArgumentException("batch size must be positive, was " + count);
        }
        long raw = checkedSize(shape, dtype, format);
        Throwable site = LeakDetection.siteIfRecording();
        List<MemoryObj> objs = new ArrayList<>(count);
        lock.lock();
        try {
            ensureOpen();
            if (freePages < count) {
                failedAllocations++;
                return Optional.empty();
            }
            for (int i = 0; i < count; i++) {
                objs.add(newObject(pop(), raw, shape, dtype, format, site));
            }
            allocations += count;
        } finally {
            lock.unlock();
        }
        for (MemoryObj obj : objs) {
            track(obj);
        }
        objs.sort((a, b) -> Long.compare(a.address(), b.address()));
        return Optional.of(List.copyOf(objs));
    }

    @Override
    public void releaseAll(Collection<MemoryObj> objects) {
        AllocatorChecks.requireOwnedAndLive(objects, this);
        for (MemoryObj obj : objects) {
            if (obj.releaseDeferringReclaim(this)) {
                reclaim(obj);
            }
        }
    }

    @Override
    public void reclaim(MemoryObj obj) {
        lock.lock();
        try {
            int page = pageOf(obj.address());
            ledger.remove(page, obj);
            if (obj.privateArena() != null) {
                obj.privateArena().close();
            }
            push(page);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void pinnedCountChanged(int delta) {
        pinned.add(delta);
    }

    @Override
    public AllocatorStats stats() {
        lock.lock();
        try {
            long capacity = pageSize * pageCount;
            return new AllocatorStats(name, capacity, ledger.usedBytes(), freePages * pageSize,
                    freePages > 0 ? pageSize : 0, freePages, ledger.size(), pinned.sum(), allocations,
                    failedAllocations, leaksReclaimed);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void memcheck() {
        lock.lock();
        try {
            if (freePages + ledger.size() != pageCount || ledger.usedBytes() != (long) ledger.size() * pageSize) {
                throw new IllegalStateException("allocator '" + name + "' accounting broken: " + freePages
                        + " free + " + ledger.size() + " live pages != " + pageCount);
            }
            boolean[] seen = new boolean[pageCount];
            for (int i = 0; i < freePages; i++) {
                int page = ring[(head + i) % pageCount];
                if (seen[page]) {
                    throw new IllegalStateException("allocator '" + name + "': page " + page + " is twice in the free ring");
                }
                seen[page] = true;
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            if (ledger.size() > 0) {
                throw new AllocatorLeakException(name, ledger.size(), ledger.describeLive(20));
            }
            closed = true;
            if (arena != null) {
                arena.close();
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return "PagedTensorMemoryAllocator['" + name + "', " + pageCount + " pages of " + pageSize + " bytes]";
    }

    // No % and no / on the per-allocation path: an integer division costs tens of cycles, a good part
    // of a whole allocate+free pair here.
    private int pop() {
        int page = ring[head];
        head = head + 1 == pageCount ? 0 : head + 1;
        freePages--;
        return page;
    }

    /** The page an object's address starts: a shift when pages are a power of two (the usual KV chunk). */
    private int pageOf(long address) {
        return (int) (pageShift >= 0 ? address >>> pageShift : address / pageSize);
    }

    private void push(int page) {
        int at = head + freePages; // < 2 * pageCount
        ring[at >= pageCount ? at - pageCount : at] = page;
        freePages++;
    }

    private MemoryObj newObject(int page, long raw, TensorShape shape, DType dtype, MemoryFormat format, Throwable site) {
        Arena own = null;
        MemorySegment segment;
        if (arena == null) {
            own = Arena.ofShared();
            segment = own.allocate(raw, 64);
        } else {
            segment = region.asSlice(page * pageSize, raw); // a partial chunk sees only its bytes
        }
        MemoryObj obj = new MemoryObj(this, ids.next(), page * pageSize, pageSize, shape, dtype, format, segment, own, site, null);
        ledger.add(page, obj);
        return obj;
    }

    private void track(MemoryObj obj) {
        if (LeakDetection.shouldTrack()) {
            obj.attachLeakTracker(LeakDetection.register(obj, new LeakReclaimer(this, pageOf(obj.address()), obj.id(),
                    obj.privateArena(), obj.toString())));
        }
    }

    private record LeakReclaimer(PagedTensorMemoryAllocator owner, int page, long id, Arena arena, String description)
            implements Runnable {
        @Override
        public void run() {
            owner.reclaimLeak(this);
        }
    }

    private void reclaimLeak(LeakReclaimer leak) {
        lock.lock();
        try {
            if (closed || !ledger.removeIfOwned(leak.page(), leak.id(), pageSize)) {
                return;
            }
            if (leak.arena() != null) {
                leak.arena().close();
            }
            push(leak.page());
            leaksReclaimed++;
        } finally {
            lock.unlock();
        }
        LOG.log(Level.WARNING, "LEAK: " + leak.description() + " became unreachable without release(); its page was reclaimed.");
    }

    private long checkedSize(TensorShape shape, DType dtype, MemoryFormat format) {
        long raw = AllocatorChecks.tensorBytes(shape, dtype, format);
        if (raw > pageSize) {
            throw new IllegalArgumentException(shape + " of " + dtype.torchName() + " is " + raw
                    + " bytes; pages of '" + name + "' hold 1 to " + pageSize);
        }
        return raw;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("allocator '" + name + "' is closed");
        }
    }
}
