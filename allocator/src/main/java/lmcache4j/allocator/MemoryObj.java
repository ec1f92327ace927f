package lmcache4j.allocator;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

import lmcache4j.allocator.internal.AllocationLedger;
import lmcache4j.allocator.internal.LeakDetection;

/**
 * A chunk of KV data: a slice of a host region plus its metadata (shape, dtype, format, physical
 * size, token count), a reference count and a pin count.
 *
 * <p>Lifecycle (DESIGN.md, Memory model): an object is born with one reference, its creator's.
 * Whoever keeps it takes a reference ({@link #retain()}) and drops it ({@link #release()}); pins
 * ({@link #pin()}/{@link #unpin()}) are separate and block eviction. The memory goes back to the
 * allocator exactly once, when both counts reach zero; from then on every method that touches the
 * object throws {@link MemoryObjMisuseException}. Objects are never reused: each allocation gives
 * a fresh object with a fresh {@link #id()}, so a stale reference is always detected.
 *
 * <p>Thread-safe. The counts live in one {@code long} updated by compare-and-set: retain, release,
 * pin and unpin take no lock.
 *
 * <p>Only allocators make objects, and only through {@link #release()}, {@link #unpin()} and
 * {@link MemoryAllocator#releaseAll} does memory go back: the hooks between an object and its
 * allocator ({@link AbstractMemoryAllocator}) are package-private.
 */
public final class MemoryObj {
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(MemoryObj.class, "state", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    // state = RELEASED bit (63) | pin count (bits 32..62) | reference count XOR 1 (bits 0..30).
    // The XOR makes the field's default 0 mean "one reference, no pin": a new object needs no
    // initializing store, and a volatile store in the constructor was a full fence per allocation.
    private static final long RELEASED = Long.MIN_VALUE;
    private static final long COUNT_MASK = 0x7FFF_FFFFL;
    private static final int PIN_SHIFT = 32;
    private static final long ONE_PIN = 1L << PIN_SHIFT;

    @SuppressWarnings("unused") // accessed through STATE
    private volatile long state; // 0: one reference (the creator's), no pin

    private final long id;
    private final AbstractMemoryAllocator owner;
    private final long address;
    private final long physicalSize;
    private final TensorShape shape;
    private final DType dtype;
    private final MemoryFormat format;
    private final MemorySegment segment;
    private final Arena privateArena;
    private final Throwable allocationSite;
    private final AllocationLedger.Entry ledgerEntry;
    /** Set once by the allocator right after allocation, for sampled objects only; read when the memory goes back. */
    private LeakDetection.Tracker leakTracker;

    /**
     * Made by {@link AbstractMemoryAllocator} only.
     *
     * @param owner          the allocator the memory goes back to
     * @param id             the allocation's id, unique in the process (see {@code IdSequence})
     * @param address        the slice's offset in the owner's address space
     * @param physicalSize   bytes reserved for the object (alignment or page included)
     * @param segment        the object's bytes: exactly {@code shape × dtype} long
     * @param privateArena   in strict mode, the arena that backs this object alone; else null
     * @param allocationSite where it was allocated, when leak debugging records it; else null
     * @param ledgerEntry    the owner's bookkeeping record of this allocation, or null
     */
    MemoryObj(AbstractMemoryAllocator owner, long id, long address, long physicalSize, TensorShape shape, DType dtype,
              MemoryFormat format, MemorySegment segment, Arena privateArena, Throwable allocationSite,
              AllocationLedger.Entry ledgerEntry) {
        this.owner = Objects.requireNonNull(owner, "owner");
        this.shape = Objects.requireNonNull(shape, "shape");
        this.dtype = Objects.requireNonNull(dtype, "dtype");
        this.format = Objects.requireNonNull(format, "format");
        this.segment = Objects.requireNonNull(segment, "segment");
        this.address = address;
        this.physicalSize = physicalSize;
        this.privateArena = privateArena;
        this.allocationSite = allocationSite;
        this.ledgerEntry = ledgerEntry;
        this.id = id;
    }

    // ---- lifecycle --------------------------------------------------------------------------

    /** Takes one more reference. Returns {@code this}. */
    public MemoryObj retain() {
        long s;
        do {
            s = (long) STATE.getVolatile(this);
            checkLive(s, "retain");
            if (refs(s) == COUNT_MASK) {
                throw misuse("retain", "the reference count would overflow", s);
            }
        } while (!STATE.compareAndSet(this, s, withRefs(s, refs(s) + 1)));
        return this;
    }

    /**
     * Drops one reference. When it was the last and no pin is left, the memory goes back to the
     * allocator.
     *
     * @return whether this call returned the memory
     * @throws MemoryObjMisuseException when no reference is left to drop, or after the memory went back
     */
    public boolean release() {
        if (releaseDeferringReclaim()) {
            owner.reclaim(this);
            return true;
        }
        return false;
    }

    /**
     * For the owner releasing many objects at once: drops one reference like {@link #release()},
     * but when it was the last (and no pin is left) returns true and leaves returning the memory to
     * the owner.
     */
    boolean releaseDeferringReclaim() {
        long s;
        long next;
        do {
            s = (long) STATE.getVolatile(this);
            checkLive(s, "release");
            if (refs(s) == 0) {
                throw misuse("release", "the reference count is already 0 (release below zero)", s);
            }
            next = withRefs(s, refs(s) - 1);
            if (refs(next) == 0 && pins(next) == 0) {
                next |= RELEASED;
            }
        } while (!STATE.compareAndSet(this, s, next));
        if (next < 0) {
            LeakDetection.released(leakTracker);
            return true;
        }
        return false;
    }

    /** Pins the object: it cannot be evicted until every pin is undone. */
    public void pin() {
        long s;
        do {
            s = (long) STATE.getVolatile(this);
            checkLive(s, "pin");
            if (pins(s) == COUNT_MASK) {
                throw misuse("pin", "the pin count would overflow", s);
            }
        } while (!STATE.compareAndSet(this, s, s + ONE_PIN));
        if (pins(s) == 0) {
            owner.pinnedCountChanged(+1);
        }
    }

    /**
     * Undoes one pin. When it was the last pin and no reference is left, the memory goes back.
     *
     * @return whether this call returned the memory
     * @throws MemoryObjMisuseException when the object is not pinned, or after the memory went back
     */
    public boolean unpin() {
        long s;
        long next;
        do {
            s = (long) STATE.getVolatile(this);
            checkLive(s, "unpin");
            if (pins(s) == 0) {
                throw misuse("unpin", "the pin count is already 0 (unpin below zero)", s);
            }
            next = s - ONE_PIN;
            if (refs(next) == 0 && pins(next) == 0) {
                next |= RELEASED;
            }
        } while (!STATE.compareAndSet(this, s, next));
        if (pins(next) == 0) {
            owner.pinnedCountChanged(-1);
        }
        if (next < 0) {
            LeakDetection.released(leakTracker);
            owner.reclaim(this);
            return true;
        }
        return false;
    }

    /** Current references; 0 once released. */
    public int refCount() {
        return (int) refs((long) STATE.getVolatile(this));
    }

    /** Current pins. */
    public int pinCount() {
        return (int) pins((long) STATE.getVolatile(this));
    }

    /** Whether at least one pin is held. */
    public boolean isPinned() {
        return pinCount() > 0;
    }

    /** Evictable: live, not pinned, and only the cache's own reference left. */
    public boolean canEvict() {
        long s = (long) STATE.getVolatile(this);
        return s >= 0 && pins(s) == 0 && refs(s) == 1;
    }

    /** Whether the memory is still this object's (not yet returned to the allocator). */
    public boolean isValid() {
        return (long) STATE.getVolatile(this) >= 0;
    }

    // ---- data and metadata ------------------------------------------------------------------

    /**
     * The object's bytes ({@link #byteSize()} long). Valid until the memory goes back; in strict
     * mode any access after that throws from the FFM runtime, otherwise the bytes may belong to a
     * new object by then, so never keep the segment beyond your reference.
     */
    public MemorySegment segment() {
        checkLive((long) STATE.getVolatile(this), "segment");
        return segment;
    }

    /** The allocation's sequence number: unique for the life of the process, never reused. */
    public long id() {
        return id;
    }

    /** Logical bytes: shape × dtype. */
    public long byteSize() {
        return segment.byteSize();
    }

    /** Bytes reserved, alignment or page rounding included. */
    public long physicalSize() {
        return physicalSize;
    }

    /** Offset in the owning allocator's address space (LMCache's {@code metadata.address}). */
    public long address() {
        return address;
    }

    public TensorShape shape() {
        return shape;
    }

    public DType dtype() {
        return dtype;
    }

    public MemoryFormat format() {
        return format;
    }

    /** Tokens held, read along the format's token dimension. */
    public int tokenCount() {
        return format.tokenCount(shape);
    }

    /** The name of the allocator that owns the memory. */
    public String ownerName() {
        return owner.name();
    }

    /** The allocator that owns the memory. */
    AbstractMemoryAllocator owner() {
        return owner;
    }

    /** The arena backing this object alone (strict mode), or null. For the owner. */
    Arena privateArena() {
        return privateArena;
    }

    /** Where the object was allocated, when leak debugging is on; else null. */
    public Throwable allocationSite() {
        return allocationSite;
    }

    /**
     * For the owner, right after allocation and before the object is handed out: the leak
     * detector's registration of this object, dropped when the memory goes back properly.
     */
    void attachLeakTracker(LeakDetection.Tracker tracker) {
        if (leakTracker != null) {
            throw new IllegalStateException(this + " already has a leak tracker");
        }
        leakTracker = tracker;
    }

    /** The owner's bookkeeping record of this allocation, or null. For the owner. */
    AllocationLedger.Entry ledgerEntry() {
        return ledgerEntry;
    }

    private static long refs(long s) {
        return (s & COUNT_MASK) ^ 1;
    }

    private static long withRefs(long s, long refs) {
        return (s & ~COUNT_MASK) | (refs ^ 1);
    }

    private static long pins(long s) {
        return (s >>> PIN_SHIFT) & COUNT_MASK;
    }

    private void checkLive(long s, String operation) {
        if (s < 0) {
            throw misuse(operation, "its memory was already returned to the allocator (use after release)", s);
        }
    }

    private MemoryObjMisuseException misuse(String operation, String what, long s) {
        return new MemoryObjMisuseException(operation + "() on " + this + " refused: " + what
                + (s < 0 ? "" : "; refs " + refs(s) + ", pins " + pins(s)));
    }

    /** The identity and metadata, for messages: {@code MemoryObj#17[KV_2LTD [2, 32, 256, 1024] bfloat16, ...]}. */
    @Override
    public String toString() {
        return "MemoryObj#" + id + "[" + format + " " + shape + " " + dtype.torchName() + ", " + segment.byteSize()
                + " bytes at offset " + address + " of '" + owner.name() + "']";
    }
}
