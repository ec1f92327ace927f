package lmcache4j.engine.storage;

import java.util.List;
import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;

/** A tier that also hands out memory for objects (LMCache's {@code AllocatorBackendInterface}). */
public interface AllocatorBackend extends StorageBackend, MemoryProvider {

    /** {@code count} objects, all or nothing, evicting or waiting as {@code mode} allows. */
    Optional<List<MemoryObj>> allocateBatch(TensorShape shape, DType dtype, MemoryFormat format, int count,
                                            AllocationMode mode);

    /** The allocator objects come from. */
    MemoryAllocator allocator();
}
