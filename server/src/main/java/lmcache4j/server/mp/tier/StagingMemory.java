package lmcache4j.server.mp.tier;

import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.host.HostArenaOptions;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;

/**
 * Host memory of a fixed size the lower tiers copy through: the writer stages a published object
 * here before the tiers write it, and the tiers read objects back into it. Never the shared pool
 * (a tier may hold an object long after the pool reused its slot). Never waits: when it is full, the
 * write is dropped or the read is a miss.
 */
final class StagingMemory implements MemoryProvider, AutoCloseable {
    private final TensorMemoryAllocator allocator;

    StagingMemory(long bytes) {
        allocator = TensorMemoryAllocator.create("mp-l2-staging",
                HostArena.allocate(bytes, HostArenaOptions.DEFAULT.withCudaPinned(false)),
                TensorMemoryAllocator.DEFAULT_ALIGNMENT);
    }

    @Override
    public Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format, AllocationMode mode) {
        return allocator.allocate(shape, dtype, format);
    }

    /** Bytes held by staged objects now. */
    long usedBytes() {
        return allocator.stats().usedBytes();
    }

    @Override
    public void close() {
        allocator.close();
    }
}
