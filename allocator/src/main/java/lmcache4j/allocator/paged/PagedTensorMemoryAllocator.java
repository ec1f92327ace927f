package lmcache4j.allocator.paged;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

import lmcache4j.allocator.AbstractMemoryAllocator;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostMemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;

/**
 * Fixed-size pages (LMCache spec §2.6): every page holds one full chunk; a partial last chunk
 * takes a whole page and sees only its own bytes. Free pages wait in a FIFO ring of page indices,
 * so allocate and free are O(1) and fragmentation cannot happen.
 *
 * <p>Unlike LMCache, pages are not pre-built objects that get reused: each allocation makes a
 * fresh {@link lmcache4j.allocator.MemoryObj}, so a reference kept past release is caught instead of aliasing the
 * page's next owner. In strict mode each object gets its own arena, as in
 * {@link lmcache4j.allocator.tensor.TensorMemoryAllocator#strict}.
 */
public final class PagedTensorMemoryAllocator extends AbstractMemoryAllocator implements HostMemoryAllocator {
    /** Alignment of each object's own arena in strict mode. */
    private static final long STRICT_ALIGNMENT = 64;

    private final long pageSize;
    /** log2(pageSize) when it is a power of two, else -1. */
    private final int pageShift;
    private final int pageCount;
    private final HostArena arena;
    /** The arena's segment, fetched once: slicing it is the allocation fast path. */
    private final MemorySegment region;
    private final int[] ring;
    private int head;
    private int freePages;

    private PagedTensorMemoryAllocator(String name, long pageSize, int pageCount, HostArena arena) {
        super(name, pageCount, arena == null ? STRICT_ALIGNMENT : 0);
        this.pageSize = pageSize;
        this.pageShift = Long.bitCount(pageSize) == 1 ? Long.numberOfTrailingZeros(pageSize) : -1;
        this.pageCount = pageCount;
        this.arena = arena;
        this.region = arena == null ? null : arena.segment();
        this.ring = new int[pageCount];
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

    /** Bytes per page. */
    public long pageSize() {
        return pageSize;
    }

    @Override
    public String memoryDescription() {
        return arena == null ? "strict mode: each object in its own arena" : arena.description();
    }

    @Override
    public boolean cudaPinned() {
        return arena != null && arena.kind().cudaPinned();
    }

    @Override
    public String toString() {
        return "PagedTensorMemoryAllocator['" + name() + "', " + pageCount + " pages of " + pageSize + " bytes]";
    }

    // ---- placement --------------------------------------------------------------------------

    @Override
    protected long dataBytes(TensorShape shape, DType dtype, MemoryFormat format) {
        long raw = tensorBytes(shape, dtype, format);
        if (raw > pageSize) {
            throw new IllegalArgumentException(shape + " of " + dtype.torchName() + " is " + raw
                    + " bytes; pages of '" + name() + "' hold 1 to " + pageSize);
        }
        return raw;
    }

    @Override
    protected long reservedBytes(long bytes) {
        return pageSize; // a partial chunk takes a whole page
    }

    @Override
    protected long reserve(long size) {
        return freePages == 0 ? -1 : pop() * pageSize;
    }

    @Override
    protected boolean reserveBatch(long size, long[] addresses) {
        if (freePages < addresses.length) {
            return false;
        }
        for (int i = 0; i < addresses.length; i++) {
            addresses[i] = pop() * pageSize;
        }
        Arrays.sort(addresses);
        return true;
    }

    @Override
    protected MemorySegment slice(long address, long bytes) {
        return region.asSlice(address, bytes); // a partial chunk sees only its bytes
    }

    @Override
    protected void unreserve(long address, long size) {
        push(pageOf(address));
    }

    /** The page an object's address starts: a shift when pages are a power of two (the usual KV chunk). */
    @Override
    protected long slotOf(long address) {
        return pageOf(address);
    }

    @Override
    protected long capacityBytes() {
        return pageSize * pageCount;
    }

    @Override
    protected long freeBytes() {
        return freePages * pageSize;
    }

    @Override
    protected long largestFreeBlock() {
        return freePages > 0 ? pageSize : 0;
    }

    @Override
    protected long freeBlockCount() {
        return freePages;
    }

    @Override
    protected void checkPlacement() {
        if (freePages + liveObjects() != pageCount || usedBytes() != (long) liveObjects() * pageSize) {
            throw new IllegalStateException("allocator '" + name() + "' accounting broken: " + freePages
                    + " free + " + liveObjects() + " live pages != " + pageCount);
        }
        boolean[] seen = new boolean[pageCount];
        for (int i = 0; i < freePages; i++) {
            int page = ring[(head + i) % pageCount];
            if (seen[page]) {
                throw new IllegalStateException("allocator '" + name() + "': page " + page + " is twice in the free ring");
            }
            seen[page] = true;
        }
    }

    @Override
    protected void releaseMemory() {
        if (arena != null) {
            arena.close();
        }
    }

    // No % and no / on the per-allocation path: an integer division costs tens of cycles, a good part
    // of a whole allocate+free pair here.
    private int pop() {
        int page = ring[head];
        head = head + 1 == pageCount ? 0 : head + 1;
        freePages--;
        return page;
    }

    private int pageOf(long address) {
        return (int) (pageShift >= 0 ? address >>> pageShift : address / pageSize);
    }

    private void push(int page) {
        int at = head + freePages; // < 2 * pageCount
        ring[at >= pageCount ? at - pageCount : at] = page;
        freePages++;
    }
}
