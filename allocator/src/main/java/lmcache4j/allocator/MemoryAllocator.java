package lmcache4j.allocator;

import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * Carves {@link MemoryObj}s out of host memory. LMCache's allocator interface (spec §2.4) in Java
 * form: allocation failure is an empty result (the caller evicts and retries), never an exception,
 * and memory goes back through the objects' reference counts rather than a public free.
 *
 * <p>Implementations are thread-safe. Closing proves there is no leak: it fails with
 * {@link AllocatorLeakException}, listing them, while objects are still live.
 */
public interface MemoryAllocator extends AutoCloseable {

    /** The allocator's name, used in messages and metrics. */
    String name();

    /**
     * One object of {@code shape} and {@code dtype} in {@code format}, with one reference (the
     * caller's), or empty when no memory is free for it.
     *
     * @throws IllegalArgumentException when the shape does not fit the format, the format is not
     *                                  one this allocator serves, or the size exceeds its capacity
     * @throws IllegalStateException    after {@link #close()}
     */
    Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format);

    /**
     * {@code count} objects of the same shape, all or nothing (LMCache's {@code batched_allocate}).
     *
     * @return the objects in ascending address order, or empty when they do not all fit
     */
    Optional<List<MemoryObj>> allocateBatch(TensorShape shape, DType dtype, MemoryFormat format, int count);

    /**
     * Drops one reference of each object, returning in one pass the memory of those whose last
     * reference this was (LMCache's {@code batched_free}: contiguous runs are merged before they
     * re-enter the free list). Every object must belong to this allocator; the call checks all of
     * them before releasing any.
     */
    void releaseAll(Collection<MemoryObj> objects);

    /** Capacity, usage and fragmentation now. */
    AllocatorStats stats();

    /**
     * Checks the allocator's invariants (LMCache's {@code memcheck}, stricter): used + free =
     * capacity, no two adjacent free blocks, live objects account for the used bytes.
     *
     * @throws IllegalStateException naming the invariant that does not hold
     */
    void memcheck();

    /**
     * Releases the memory. Fails, listing the live objects (with allocation sites when
     * {@code -Dlmcache4j.leakDetection=paranoid}), if any object still holds a reference or a pin;
     * the memory is kept in that case so that nothing dangles.
     */
    @Override
    void close();
}
