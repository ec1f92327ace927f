package lmcache4j.allocator;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.allocator.internal.AllocationLedger;
import lmcache4j.allocator.internal.IdSequence;
import lmcache4j.allocator.internal.LeakDetection;
import lmcache4j.allocator.internal.PoolLock;
import lmcache4j.allocator.paged.PagedTensorMemoryAllocator;
import lmcache4j.allocator.pool.BufferAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;

/**
 * What every allocator that owns memory does alike: numbers its objects, keeps the ledger of the
 * live ones, counts pins, allocations and failures, tracks leaks, and refuses to close while an
 * object is live. A subclass only decides placement: where an object of a given size goes and how
 * its space comes back.
 *
 * <p>Sealed: the way memory goes back to an allocator ({@link MemoryObj#release()} reaching zero)
 * is a package-private contract between this class and {@link MemoryObj}, and the protected hooks
 * are reachable only from the permitted subclasses, so no caller can free memory behind a
 * reference count.
 *
 * <p>Thread-safe: placement, ledger and counters are guarded by one spin-then-park lock; reference
 * and pin counting take no lock.
 */
public abstract sealed class AbstractMemoryAllocator implements MemoryAllocator
        permits TensorMemoryAllocator, PagedTensorMemoryAllocator, BufferAllocator {
    private static final System.Logger LOG = System.getLogger(AbstractMemoryAllocator.class.getName());
    private static final int LEAKS_LISTED_AT_CLOSE = 20;

    private final String name;
    private final long strictAlignment;
    private final PoolLock lock = new PoolLock();
    private final IdSequence ids = new IdSequence();
    private final AllocationLedger ledger;
    private final LongAdder pinned = new LongAdder();
    private long allocations;
    private long failedAllocations;
    private long leaksReclaimed;
    private boolean closed;

    /**
     * @param name            the allocator's name, for messages and metrics
     * @param pages           the number of fixed-size pages whose owners the ledger keeps in an
     *                        array (see {@link #slotOf}); 0 when objects are of any size and place
     * @param strictAlignment in strict mode (tests, fuzzing), the alignment of the arena each object
     *                        gets to itself, so that any access after release throws; 0 when
     *                        objects are {@linkplain #slice slices} of the allocator's memory
     */
    protected AbstractMemoryAllocator(String name, int pages, long strictAlignment) {
        this.name = Objects.requireNonNull(name, "name");
        this.ledger = pages > 0 ? AllocationLedger.dense(pages) : AllocationLedger.linked();
        this.strictAlignment = strictAlignment;
    }

    // ---- placement: what a subclass decides ---------------------------------------------------

    /**
     * The bytes an object of {@code shape × dtype} in {@code format} holds, after checking that this
     * allocator can ever serve it.
     *
     * @throws IllegalArgumentException when it cannot
     */
    protected abstract long dataBytes(TensorShape shape, DType dtype, MemoryFormat format);

    /** The bytes an object of {@code dataBytes} takes here, rounding included. */
    protected abstract long reservedBytes(long dataBytes);

    /** Under the lock: the address of {@code size} free bytes now taken, or -1 when none are free. */
    protected abstract long reserve(long size);

    /**
     * Under the lock: takes {@code addresses.length} places of {@code size} bytes, all or none, and
     * writes their addresses in ascending order.
     *
     * @return whether they were taken
     */
    protected abstract boolean reserveBatch(long size, long[] addresses);

    /** Under the lock: the bytes at {@code address} for a new object (not called in strict mode). */
    protected abstract MemorySegment slice(long address, long bytes);

    /** Under the lock: the {@code size} bytes at {@code address} are free again. */
    protected abstract void unreserve(long address, long size);

    /**
     * Under the lock: the places of these objects, whose memory goes back together, are free again.
     * Merging neighbours is the subclass's business; by default each is freed on its own.
     */
    protected void unreserveAll(List<MemoryObj> objects) {
        for (MemoryObj obj : objects) {
            unreserve(obj.address(), obj.physicalSize());
        }
    }

    /** The ledger slot of the object at {@code address}: its page for a paged allocator. */
    protected long slotOf(long address) {
        return address;
    }

    /** Under the lock: bytes this allocator manages now. */
    protected abstract long capacityBytes();

    /** Under the lock: bytes free now. */
    protected abstract long freeBytes();

    /** Under the lock: the largest allocation that can succeed now. */
    protected abstract long largestFreeBlock();

    /** Under the lock: how many free blocks (pages for a paged allocator). */
    protected abstract long freeBlockCount();

    /** Under the lock, from {@link #memcheck()}: the placement's own invariants; throws naming the broken one. */
    protected void checkPlacement() {
    }

    /** Under the lock, once, when closing with nothing live: gives the memory back. */
    protected abstract void releaseMemory();

    // ---- what every allocator does alike ------------------------------------------------------

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format) {
        long bytes = dataBytes(shape, dtype, format);
        long size = reservedBytes(bytes);
        Throwable site = LeakDetection.siteIfRecording();
        MemoryObj obj;
        lock.lock();
        try {
            ensureOpen();
            long address = reserve(size);
            if (address < 0) {
                failedAllocations++;
                return Optional.empty();
            }
            obj = newObject(address, size, bytes, shape, dtype, format, site);
            allocations++;
        } finally {
            lock.unlock();
        }
        trackLeak(obj);
        return Optional.of(obj);
    }

    @Override
    public final Optional<List<MemoryObj>> allocateBatch(TensorShape shape, DType dtype, MemoryFormat format, int count) {
        if (count <= 0) {
            throw new IllegalArgumentException("batch size must be positive, was " + count);
        }
        long bytes = dataBytes(shape, dtype, format);
        long size = reservedBytes(bytes);
        long[] addresses = new long[count];
        Throwable site = LeakDetection.siteIfRecording();
        List<MemoryObj> objs = new ArrayList<>(count);
        lock.lock();
        try {
            ensureOpen();
            if (!reserveBatch(size, addresses)) {
                failedAllocations++;
                return Optional.empty();
            }
            for (long address : addresses) {
                objs.add(newObject(address, size, bytes, shape, dtype, format, site));
            }
            allocations += count;
        } finally {
            lock.unlock();
        }
        for (MemoryObj obj : objs) {
            trackLeak(obj);
        }
        return Optional.of(List.copyOf(objs));
    }

    @Override
    public final void releaseAll(Collection<MemoryObj> objects) {
        requireOwnedAndLive(objects);
        List<MemoryObj> last = new ArrayList<>(objects.size());
        for (MemoryObj obj : objects) {
            if (obj.releaseDeferringReclaim()) {
                last.add(obj);
            }
        }
        if (last.isEmpty()) {
            return;
        }
        lock.lock();
        try {
            for (MemoryObj obj : last) {
                forget(obj);
            }
            unreserveAll(last);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public final AllocatorStats stats() {
        lock.lock();
        try {
            return new AllocatorStats(name, capacityBytes(), ledger.usedBytes(), freeBytes(), largestFreeBlock(),
                    freeBlockCount(), ledger.size(), pinned.sum(), allocations, failedAllocations, leaksReclaimed);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public final void memcheck() {
        lock.lock();
        try {
            if (freeBytes() + ledger.usedBytes() != capacityBytes()) {
                throw new IllegalStateException("allocator '" + name + "' accounting broken: free " + freeBytes()
                        + " + used " + ledger.usedBytes() + " != capacity " + capacityBytes());
            }
            checkPlacement();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public final void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            if (ledger.size() > 0) {
                throw new AllocatorLeakException(name, ledger.size(), ledger.describeLive(LEAKS_LISTED_AT_CLOSE));
            }
            closed = true;
            releaseMemory();
        } finally {
            lock.unlock();
        }
    }

    /** Takes the lock that guards placement; for subclass operations beyond the hooks (growth). */
    protected final void lock() {
        lock.lock();
    }

    protected final void unlock() {
        lock.unlock();
    }

    /** Under the lock: bytes held by live objects. */
    protected final long usedBytes() {
        return ledger.usedBytes();
    }

    /** Under the lock: live objects. */
    protected final int liveObjects() {
        return ledger.size();
    }

    /** Under the lock: fails once the allocator is closed. */
    protected final void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("allocator '" + name + "' is closed");
        }
    }

    /** The bytes of a tensor of {@code shape × dtype} in {@code format}, after checking the shape fits the format and is not empty. */
    protected static long tensorBytes(TensorShape shape, DType dtype, MemoryFormat format) {
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(format, "format");
        format.validate(shape);
        long raw = shape.byteSize(dtype);
        if (raw == 0) {
            throw new IllegalArgumentException("cannot allocate an empty tensor: shape " + shape);
        }
        return raw;
    }

    // ---- the contract with MemoryObj ----------------------------------------------------------

    /** The object's last reference and last pin are gone: its memory comes back. Called once per object. */
    final void reclaim(MemoryObj obj) {
        lock.lock();
        try {
            forget(obj);
            unreserve(obj.address(), obj.physicalSize());
        } finally {
            lock.unlock();
        }
    }

    /** The number of pinned objects changed by {@code delta} (+1 on a first pin, -1 on a last unpin). */
    final void pinnedCountChanged(int delta) {
        pinned.add(delta);
    }

    // ---- internals ----------------------------------------------------------------------------

    private MemoryObj newObject(long address, long size, long bytes, TensorShape shape, DType dtype, MemoryFormat format,
                                Throwable site) {
        Arena own = null;
        MemorySegment segment;
        if (strictAlignment > 0) {
            own = Arena.ofShared();
            segment = own.allocate(bytes, strictAlignment);
        } else {
            segment = slice(address, bytes);
        }
        long slot = slotOf(address);
        AllocationLedger.Entry entry = ledger.newEntry(slot);
        MemoryObj obj = new MemoryObj(this, ids.next(), address, size, shape, dtype, format, segment, own, site, entry);
        ledger.add(slot, obj, entry);
        return obj;
    }

    /** Under the lock: drops the object from the ledger and closes its own arena; its place is freed next. */
    private void forget(MemoryObj obj) {
        ledger.remove(slotOf(obj.address()), obj, obj.ledgerEntry());
        if (obj.privateArena() != null) {
            obj.privateArena().close();
        }
    }

    /** A batched release either releases all or none: every object must be this allocator's and live. */
    private void requireOwnedAndLive(Collection<MemoryObj> objects) {
        for (MemoryObj obj : objects) {
            if (obj.owner() != this) {
                throw new MemoryObjMisuseException("releaseAll on '" + name + "' refused: " + obj
                        + " belongs to allocator '" + obj.ownerName() + "'");
            }
            if (!obj.isValid()) {
                throw new MemoryObjMisuseException("releaseAll on '" + name + "' refused: " + obj
                        + " was already released (use after release)");
            }
        }
    }

    private void trackLeak(MemoryObj obj) {
        if (LeakDetection.shouldTrack()) {
            obj.attachLeakTracker(LeakDetection.register(obj, new LeakReclaimer(this, slotOf(obj.address()), obj.id(),
                    obj.address(), obj.physicalSize(), obj.ledgerEntry(), obj.privateArena(), obj.toString())));
        }
    }

    /** Runs when a tracked object became unreachable; takes its place back if it was never released. Holds no reference to it. */
    private record LeakReclaimer(AbstractMemoryAllocator owner, long slot, long id, long address, long size,
                                 AllocationLedger.Entry entry, Arena arena, String description) implements Runnable {
        @Override
        public void run() {
            owner.reclaimLeak(this);
        }
    }

    private void reclaimLeak(LeakReclaimer leak) {
        lock.lock();
        try {
            if (closed || !ledger.removeLeaked(leak.slot(), leak.id(), leak.size(), leak.entry())) {
                return; // released properly
            }
            if (leak.arena() != null) {
                leak.arena().close();
            }
            unreserve(leak.address(), leak.size());
            leaksReclaimed++;
        } finally {
            lock.unlock();
        }
        LOG.log(Level.WARNING, "LEAK: " + leak.description() + " became unreachable without release(); its "
                + leak.size() + " bytes were reclaimed. Run with -Dlmcache4j.leakDetection=paranoid to record allocation sites.");
    }
}
