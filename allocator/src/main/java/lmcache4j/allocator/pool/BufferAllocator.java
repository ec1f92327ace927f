package lmcache4j.allocator.pool;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

import lmcache4j.allocator.AbstractMemoryAllocator;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;

/**
 * On-demand byte buffers for {@link MemoryFormat#BINARY_BUFFER} objects (LMCache's
 * {@code BufferAllocator}): each buffer is fresh off-heap memory outside the pinned pool, with real
 * reference counting (LMCache's is a no-op). Buffers are backed by automatic arenas, so their
 * memory is freed by the garbage collector once released and unreachable, without the per-object
 * handshake a shared arena's close would cost. There is no placement: every buffer is at address 0
 * of its own memory, and an allocation never finds the allocator full.
 */
public final class BufferAllocator extends AbstractMemoryAllocator {
    private static final long BUFFER_ALIGNMENT = 8;

    public BufferAllocator(String name) {
        super(name, 0, 0);
    }

    /** A buffer of {@code bytes} bytes, shape {@code [bytes]} of uint8. */
    public MemoryObj allocateBytes(int bytes) {
        return allocate(TensorShape.of(bytes), DType.UINT8, MemoryFormat.BINARY_BUFFER).orElseThrow();
    }

    // ---- placement: none --------------------------------------------------------------------

    /** Only {@code BINARY_BUFFER} is served; allocations always succeed (the JVM's off-heap limits aside). */
    @Override
    protected long dataBytes(TensorShape shape, DType dtype, MemoryFormat format) {
        if (format != MemoryFormat.BINARY_BUFFER) {
            throw new IllegalArgumentException("the buffer allocator serves BINARY_BUFFER only, not " + format);
        }
        long bytes = shape.byteSize(dtype);
        if (bytes == 0) {
            throw new IllegalArgumentException("cannot allocate an empty buffer: shape " + shape);
        }
        return bytes;
    }

    @Override
    protected long reservedBytes(long bytes) {
        return bytes;
    }

    @Override
    protected long reserve(long size) {
        return 0;
    }

    @Override
    protected boolean reserveBatch(long size, long[] addresses) {
        Arrays.fill(addresses, 0);
        return true;
    }

    @Override
    protected MemorySegment slice(long address, long bytes) {
        return Arena.ofAuto().allocate(bytes, BUFFER_ALIGNMENT);
    }

    @Override
    protected void unreserve(long address, long size) {
        // The garbage collector frees the buffer's memory once it is unreachable.
    }

    /** What the live buffers hold: the allocator has no capacity of its own. */
    @Override
    protected long capacityBytes() {
        return usedBytes();
    }

    @Override
    protected long freeBytes() {
        return 0;
    }

    @Override
    protected long largestFreeBlock() {
        return 0;
    }

    @Override
    protected long freeBlockCount() {
        return 0;
    }

    @Override
    protected void releaseMemory() {
        // Nothing is held between buffers.
    }
}
