package lmcache4j.allocator.host;

import java.lang.foreign.MemorySegment;

import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.cuda.CudaRuntime;

/**
 * One large region of host memory, created once and released once (DESIGN.md, Memory model).
 * Allocators carve objects out of {@link #segment()}; closing the arena invalidates every slice of
 * it, so a late access throws rather than touching freed memory.
 */
public sealed interface HostArena extends AutoCloseable permits CudaHostAllocArena, MappedHostArena, SharedMemoryArena {

    /** How the memory was obtained. */
    enum Kind {
        /** {@code cudaHostAlloc}: pinned by the CUDA driver. */
        CUDA_HOST_ALLOC,
        /** anonymous mmap registered with {@code cudaHostRegister} (NUMA-bound pinned memory). */
        CUDA_REGISTERED_MMAP,
        /** anonymous mmap, not pinned for CUDA. */
        MMAP,
        /** a named POSIX shared-memory file ({@code /dev/shm}) other processes map too. */
        SHARED_MEMORY,
        /** a named POSIX shared-memory file registered with {@code cudaHostRegister}. */
        CUDA_REGISTERED_SHARED_MEMORY;

        /** Whether memory of this kind is pinned by CUDA. */
        public boolean cudaPinned() {
            return this == CUDA_HOST_ALLOC || this == CUDA_REGISTERED_MMAP || this == CUDA_REGISTERED_SHARED_MEMORY;
        }
    }

    /**
     * Makes an arena of {@code bytes}: CUDA-pinned when {@code options.cudaPinned()} and the
     * process's CUDA runtime is available, else anonymous mmap memory with the options applied.
     */
    static HostArena allocate(long bytes, HostArenaOptions options) {
        return HostArenas.allocate(bytes, options, CudaRuntime.load());
    }

    /** The whole region. */
    MemorySegment segment();

    /** Its size in bytes. */
    long byteSize();

    Kind kind();

    /** What was made and which options took effect, for logs and reports. */
    String description();

    /** Releases the memory. Idempotent. */
    @Override
    void close();
}
