package lmcache4j.allocator.pool;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

import lmcache4j.allocator.AllocatorLeakException;
import lmcache4j.allocator.AllocatorStats;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.internal.AllocationLedger;
import lmcache4j.allocator.internal.IdSequence;
import lmcache4j.allocator.internal.AllocatorChecks;
import lmcache4j.allocator.internal.MemoryOwner;

/**
 * On-demand byte buffers for {@link MemoryFormat#BINARY_BUFFER} objects (LMCache's
 * {@code BufferAllocator}): each buffer is fresh off-heap memory outside the pinned pool, with real
 * reference counting (LMCache's is a no-op). Buffers are backed by automatic arenas, so their
 * memory is freed by the garbage collector once released and unreachable, without the per-object
 * handshake a shared arena's close would cost.
 */
public final class BufferAllocator implements MemoryAllocator, MemoryOwner {
    private final String name;
    private final ReentrantLock lock = new ReentrantLock();
    private final IdSequence ids = new IdSequence();
    private final AllocationLedger ledger = AllocationLedger.linked();
    private final LongAdder pinned = new LongAdder();
    private long allocations;
    private boolean closed;

    public BufferAllocator(String name) {
        this.name = Objects.requireNonNull(name, "name");
    }

    /** A buffer of {@code bytes} bytes, shape {@code [bytes]} of uint8. */
    public MemoryObj allocateBytes(int bytes) {
        return allocate(TensorShape.of(bytes), DType.UINT8, MemoryFormat.BINARY_BUFFER).orElseThrow();
    }

    @Override
    public String name() {
        return name;
    }

    /** Always succeeds (the JVM's off-heap limits aside); only {@code BINARY_BUFFER} is served. */
    @Override
    public Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format) {
        if (format != MemoryFormat.BINARY_BUFFER) {
            throw new IllegalArgumentException("the buffer allocator serves BINARY_BUFFER only, not " + format);
        }
        long bytes = shape.byteSize(dtype);
        if (bytes == 0) {
            throw new IllegalArgumentException("cannot allocate an empty buffer: shape " + shape);
        }
        lock.lock();
        try {
            ensureOpen();
            MemoryObj obj = new MemoryObj(this, ids.next(), 0, bytes, shape, dtype, format, Arena.ofAuto().allocate(bytes, 8), null, null,
                    ledger.newEntry(0));
            ledger.add(0, obj);
            allocations++;
            return Optional.of(obj);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public Optional<List<MemoryObj>> allocateBatch(TensorShape shape, DType dtype, MemoryFormat format, int count) {
        if (count <= 0) {
            throw new IllegalArgumentException("batch size must be positive, was " + count);
        }
        List<MemoryObj> objs = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            objs.add(allocate(shape, dtype, format).orElseThrow());
        }
        return Optional.of(List.copyOf(objs));
    }

    @Override
    public void releaseAll(Collection<MemoryObj> objects) {
        AllocatorChecks.requireOwnedAndLive(objects, this);
        objects.forEach(MemoryObj::release);
    }

    @Override
    public void reclaim(MemoryObj obj) {
        lock.lock();
        try {
            ledger.remove(0, obj);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void pinnedCountChanged(int delta) {
        pinned.add(delta);
    }

    @Override
    public AllocatorStats stats() {
        lock.lock();
        try {
            long used = ledger.usedBytes();
            return new AllocatorStats(name, used, used, 0, 0, 0, ledger.size(), pinned.sum(), allocations, 0, 0);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void memcheck() {
        // Nothing can fragment: each buffer is its own allocation.
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (!closed && ledger.size() > 0) {
                throw new AllocatorLeakException(name, ledger.size(), ledger.describeLive(20));
            }
            closed = true;
        } finally {
            lock.unlock();
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("allocator '" + name + "' is closed");
        }
    }
}
