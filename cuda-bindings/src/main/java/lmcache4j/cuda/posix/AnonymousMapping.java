package lmcache4j.cuda.posix;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Anonymous private memory from {@code mmap(2)}, page-aligned and zero-filled, released with
 * {@code munmap(2)} exactly once by {@link #close()}. The segment is bound to a shared arena that
 * close invalidates first, so any later access from Java throws instead of touching unmapped
 * memory.
 */
public final class AnonymousMapping implements AutoCloseable {
    private final Arena arena = Arena.ofShared();
    private final MemorySegment segment;
    private final long address;
    private final long byteSize;
    private boolean closed;

    private AnonymousMapping(MemorySegment address, long byteSize) {
        this.address = address.address();
        this.byteSize = byteSize;
        this.segment = address.reinterpret(byteSize, arena, null);
    }

    /**
     * Maps {@code bytes} (rounded up to whole base pages) of readable, writable memory.
     *
     * @param hugeTlb  back it with reserved hugetlbfs pages ({@code MAP_HUGETLB}); fails with
     *                 {@code ENOMEM} unless pages are reserved
     * @param populate fault every page in now ({@code MAP_POPULATE}) rather than on first touch
     */
    public static AnonymousMapping map(long bytes, boolean hugeTlb, boolean populate) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("mapping size must be positive, was " + bytes);
        }
        long page = Posix.pageSize();
        if (bytes > Long.MAX_VALUE - page) {
            throw new IllegalArgumentException("mapping size " + bytes + " is too large");
        }
        long rounded = (bytes + page - 1) / page * page;
        int flags = Posix.MAP_PRIVATE | (hugeTlb ? Posix.MAP_HUGETLB : 0) | (populate ? Posix.MAP_POPULATE : 0);
        MemorySegment address = Posix.mmapAnonymous(rounded, Posix.PROT_READ | Posix.PROT_WRITE, flags);
        return new AnonymousMapping(address, rounded);
    }

    /** The mapped memory; throws after {@link #close()}. */
    public MemorySegment segment() {
        if (!arena.scope().isAlive()) {
            throw new IllegalStateException(this + " is closed");
        }
        return segment;
    }

    /** Bytes mapped (a whole number of pages). */
    public long byteSize() {
        return byteSize;
    }

    /** Unmaps the memory. Idempotent. Fails if a thread is accessing the segment at this moment. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        arena.close();
        closed = true;
        Posix.munmap(MemorySegment.ofAddress(address), byteSize);
    }

    @Override
    public String toString() {
        return "AnonymousMapping[0x" + Long.toHexString(address) + ", " + byteSize + " bytes]";
    }
}
