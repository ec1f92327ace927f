package lmcache4j.engine.storage;

import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;

/**
 * Where a tier gets memory for the objects it reads back (from disk, from the remote store, or
 * out of a serialized form). Handed to a tier instead of the tier that owns the memory, so no
 * tier depends on another.
 */
@FunctionalInterface
public interface MemoryProvider {

    /** One object with one reference for the caller, evicting or waiting as {@code mode} allows; empty when none. */
    Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format, AllocationMode mode);
}
