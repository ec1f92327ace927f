package lmcache4j.server.mp.tier;

import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;

/**
 * Host memory of a fixed size the lower tiers copy through: the writer stages a published object
 * here before the tiers write it ({@link #allocateForWrite}), and the tiers read objects back into it
 * (the {@link MemoryProvider} side). Never the shared pool (a tier may hold an object long after the
 * pool reused its slot). Half is for writes and half for reads, so a backlog of writes the disk has
 * not taken yet never turns loads into misses. Never waits: when a half is full, the write is
 * dropped or the read is a miss.
 */
final class StagingMemory implements MemoryProvider, AutoCloseable {
    private final TensorMemoryAllocator writes;
    private final TensorMemoryAllocator reads;

    StagingMemory(long bytes) {
        HostArenaOptions host = HostArenaOptions.DEFAULT.withCudaPinned(false);
        writes = TensorMemoryAllocator.create("mp-l2-staging-writes", HostArena.allocate(bytes - bytes / 2, host),
                TensorMemoryAllocator.DEFAULT_ALIGNMENT);
        try {
            reads = TensorMemoryAllocator.create("mp-l2-staging-reads", HostArena.allocate(bytes / 2, host),
                    TensorMemoryAllocator.DEFAULT_ALIGNMENT);
        } catch (RuntimeException e) {
            writes.close();
            throw e;
        }
    }

    /** Memory for a copy of a published object on its way to the tiers; empty when the write half is full. */
    Optional<MemoryObj> allocateForWrite(TensorShape shape, DType dtype) {
        return writes.allocate(shape, dtype, MemoryFormat.BINARY);
    }

    /** Memory for an object a tier reads back; empty when the read half is full. */
    @Override
    public Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format, AllocationMode mode) {
        return reads.allocate(shape, dtype, format);
    }

    /** Bytes held by staged objects now, both halves. */
    long usedBytes() {
        return writes.stats().usedBytes() + reads.stats().usedBytes();
    }

    @Override
    public void close() {
        try {
            writes.close();
        } finally {
            reads.close();
        }
    }
}
