package lmcache4j.allocator.pool;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.allocator.AllocatorStats;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;

/**
 * LMCache's default CPU pool (spec §2.7): KV formats go to the pinned pool (a tensor, paged or
 * lazily growing allocator), {@code BINARY_BUFFER} to on-demand buffers, and anything else is an
 * error. {@link #releaseAll} routes each object to its own allocator (LMCache routes a whole batch
 * by its first object's format).
 */
public final class MixedMemoryAllocator implements MemoryAllocator {
    private final String name;
    private final MemoryAllocator kvPool;
    private final BufferAllocator buffers;

    /** Routes KV formats to {@code kvPool}; owns both allocators and closes them. */
    public MixedMemoryAllocator(String name, MemoryAllocator kvPool) {
        this.name = Objects.requireNonNull(name, "name");
        this.kvPool = Objects.requireNonNull(kvPool, "kvPool");
        this.buffers = new BufferAllocator(name + "/buffers");
    }

    @Override
    public String name() {
        return name;
    }

    /** The pool KV objects come from. */
    public MemoryAllocator kvPool() {
        return kvPool;
    }

    @Override
    public Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format) {
        return route(format).allocate(shape, dtype, format);
    }

    @Override
    public Optional<List<MemoryObj>> allocateBatch(TensorShape shape, DType dtype, MemoryFormat format, int count) {
        return route(format).allocateBatch(shape, dtype, format, count);
    }

    @Override
    public void releaseAll(Collection<MemoryObj> objects) {
        List<MemoryObj> kv = new ArrayList<>(objects.size());
        List<MemoryObj> bytes = new ArrayList<>();
        for (MemoryObj obj : objects) {
            (obj.format() == MemoryFormat.BINARY_BUFFER ? bytes : kv).add(obj);
        }
        if (!kv.isEmpty()) {
            kvPool.releaseAll(kv);
        }
        if (!bytes.isEmpty()) {
            buffers.releaseAll(bytes);
        }
    }

    /** The KV pool's accounting (buffers live outside the pool's capacity; see {@link #bufferStats()}). */
    @Override
    public AllocatorStats stats() {
        return kvPool.stats();
    }

    /** The on-demand buffers' accounting. */
    public AllocatorStats bufferStats() {
        return buffers.stats();
    }

    @Override
    public void memcheck() {
        kvPool.memcheck();
        buffers.memcheck();
    }

    /** Closes the buffers and then the pool; fails if either still has live objects. */
    @Override
    public void close() {
        try {
            buffers.close();
        } finally {
            kvPool.close();
        }
    }

    private MemoryAllocator route(MemoryFormat format) {
        Objects.requireNonNull(format, "format");
        if (format == MemoryFormat.BINARY_BUFFER) {
            return buffers;
        }
        if (format.isKv()) {
            return kvPool;
        }
        throw new IllegalArgumentException("allocator '" + name + "' serves KV formats and BINARY_BUFFER, not " + format);
    }
}
