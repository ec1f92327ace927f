package lmcache4j.allocator;

import java.util.Objects;

import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.paged.PagedTensorMemoryAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.cuda.CudaException;
import lmcache4j.cuda.posix.Posix;
import lmcache4j.cuda.posix.PosixException;

/**
 * An allocator over host memory it owns: one region made for it (CUDA-pinned where a device and
 * driver exist and {@link HostArenaOptions#cudaPinned()} asks for it, else anonymous mmap memory
 * with the options applied), released when the allocator {@linkplain #close() closes}. This is how
 * a program outside lmcache4j builds an allocator on its own:
 *
 * <pre>{@code
 * try (HostMemoryAllocator kv = HostMemoryAllocator.tensor("kv", 1L << 30, HostArenaOptions.DEFAULT)) {
 *     MemoryObj chunk = kv.allocate(TensorShape.of(2, 32, 256, 1024), DType.BFLOAT16, MemoryFormat.KV_2LTD)
 *             .orElseThrow(); // empty: no room now
 *     ...
 *     chunk.release();
 * }
 * }</pre>
 *
 * <p>Memory goes back through the objects' reference counts ({@link MemoryObj#release()}), never
 * through a free call. Closing fails, listing them, while objects are live.
 */
public sealed interface HostMemoryAllocator extends MemoryAllocator permits TensorMemoryAllocator, PagedTensorMemoryAllocator {

    /** LMCache's alignment of every object (spec §2.5): sizes are rounded up to 4 KiB. */
    long DEFAULT_ALIGNMENT = 4096;

    /**
     * LMCache's tensor allocator over {@code capacityBytes} of new host memory: sizes rounded up to
     * 4 KiB, first fit by lowest address, freed blocks coalesced with both neighbours, batches all
     * or nothing.
     *
     * @param name          the allocator's name, in messages and statistics
     * @param capacityBytes the host memory to make, rounded up to whole pages
     * @throws IllegalArgumentException         for a non-positive size or a NUMA node the machine does not have
     * @throws HostMemoryUnavailableException   when the system refuses the memory, its mlock or its pinning
     */
    static HostMemoryAllocator tensor(String name, long capacityBytes, HostArenaOptions options) {
        return tensor(name, capacityBytes, DEFAULT_ALIGNMENT, options);
    }

    /**
     * As {@link #tensor(String, long, HostArenaOptions)}, with sizes rounded up to {@code alignment}: a
     * power of two, at most the system's page size (the memory starts on a page boundary, so that is
     * the largest alignment every object's address keeps).
     */
    static HostMemoryAllocator tensor(String name, long capacityBytes, long alignment, HostArenaOptions options) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(options, "options");
        if (alignment <= 0 || Long.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("alignment must be a power of two, was " + alignment);
        }
        if (alignment > Posix.pageSize()) {
            throw new IllegalArgumentException("alignment " + alignment + " is more than the page size " + Posix.pageSize()
                    + ": the memory starts on a page boundary, so no larger alignment can hold for every object");
        }
        HostArena arena = arena(name, capacityBytes, options);
        try {
            return TensorMemoryAllocator.create(name, arena, alignment);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * LMCache's paged allocator: {@code pageCount} fixed pages of {@code pageShape × dtype} bytes
     * each, in new host memory. Each object takes one page (a partial chunk sees only its own
     * bytes); allocate and free are O(1) and never fragment.
     *
     * @throws IllegalArgumentException       for an empty page shape, a non-positive page count, a
     *                                        total past what one region holds, or a NUMA node the machine does not have
     * @throws HostMemoryUnavailableException when the system refuses the memory, its mlock or its pinning
     */
    static HostMemoryAllocator paged(String name, int pageCount, TensorShape pageShape, DType dtype, HostArenaOptions options) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(pageShape, "pageShape");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(options, "options");
        if (pageCount <= 0) {
            throw new IllegalArgumentException("page count must be positive, was " + pageCount);
        }
        long page = pageShape.byteSize(dtype);
        if (page <= 0) {
            throw new IllegalArgumentException("page shape " + pageShape + " is empty");
        }
        if (page > Long.MAX_VALUE / pageCount) {
            throw new IllegalArgumentException(pageCount + " pages of " + page + " bytes overflow a 64-bit size");
        }
        HostArena arena = arena(name, page * pageCount, options);
        try {
            return PagedTensorMemoryAllocator.create(name, arena, pageShape, dtype);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * What the memory is and which of the options took effect, for logs: for example
     * {@code "mmap 64.0 MiB, MADV_HUGEPAGE"} or {@code "cudaHostAlloc 1.0 GiB"}. Best-effort options
     * the system refused (huge pages, NUMA binding) are named here, not thrown.
     */
    String memoryDescription();

    /** Whether all of the memory is pinned by CUDA (page-locked and registered for device copies). */
    boolean cudaPinned();

    private static HostArena arena(String name, long bytes, HostArenaOptions options) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocator '" + name + "': capacity must be positive, was " + bytes + " bytes");
        }
        try {
            return HostArena.allocate(bytes, options);
        } catch (PosixException e) {
            throw new HostMemoryUnavailableException("allocator '" + name + "': cannot make " + bytes
                    + " bytes of host memory with " + options + ": " + e.getMessage(), e);
        } catch (CudaException e) {
            throw new HostMemoryUnavailableException("allocator '" + name + "': CUDA refused " + bytes
                    + " bytes of pinned host memory (HostArenaOptions.withCudaPinned(false) makes unpinned memory): "
                    + e.getMessage(), e);
        }
    }
}
