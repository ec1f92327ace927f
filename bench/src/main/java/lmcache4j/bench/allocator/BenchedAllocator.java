package lmcache4j.bench.allocator;

import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PooledByteBufAllocator;
import lmcache4j.allocator.AllocatorStats;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.host.HostArenas;
import lmcache4j.allocator.paged.PagedTensorMemoryAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.cuda.posix.Posix;

/**
 * One allocator under test, ready to replay an {@link AllocationTrace}. Each implementation has its
 * own replay loop, so every allocate and free call site in it sees one receiver type and the
 * loops cost the same around the calls: an array read for the op, one for the slot, the call.
 *
 * <p>Replays may run in pieces ({@code [from, to)} ranges of the trace, in order) so that the
 * caller can sample {@link #stats()} between pieces, outside the timed code.
 */
public sealed interface BenchedAllocator extends AutoCloseable permits BenchedAllocator.LmcacheAllocator,
        BenchedAllocator.Netty, BenchedAllocator.Malloc {

    /** The allocators the benchmark compares, with the targets of the allocator issue. */
    enum Kind {
        TENSOR("tensor", "TensorMemoryAllocator", 200),
        PAGED("paged", "PagedTensorMemoryAllocator", 50),
        NETTY("netty", "Netty pooled direct", 0),
        MALLOC("malloc", "malloc/free via FFM", 0);

        private final String key;
        private final String displayName;
        private final int targetNs;

        Kind(String key, String displayName, int targetNs) {
            this.key = key;
            this.displayName = displayName;
            this.targetNs = targetNs;
        }

        /** The short name used on the command line and in JSON keys. */
        public String key() {
            return key;
        }

        public String displayName() {
            return displayName;
        }

        /** The target median ns per allocate+free pair, if the issue sets one. */
        public OptionalInt targetNs() {
            return targetNs > 0 ? OptionalInt.of(targetNs) : OptionalInt.empty();
        }

        /** The kind named {@code key} ({@code tensor}, {@code paged}, {@code netty}, {@code malloc}). */
        public static Kind fromKey(String key) {
            for (Kind k : values()) {
                if (k.key.equals(key.toLowerCase(Locale.ROOT))) {
                    return k;
                }
            }
            throw new IllegalArgumentException("unknown allocator '" + key + "'; valid: tensor, paged, netty, malloc");
        }
    }

    /** Makes the allocator {@code kind} sized for {@code trace}. */
    static BenchedAllocator create(Kind kind, AllocationTrace trace) {
        return switch (kind) {
            case TENSOR -> new Tensor(trace);
            case PAGED -> new Paged(trace);
            case NETTY -> new Netty(trace);
            case MALLOC -> new Malloc(trace);
        };
    }

    Kind kind();

    /** What was built and how, for reports. */
    String description();

    /**
     * Replays ops {@code [from, to)} of the trace and returns the nanoseconds they took (one
     * {@link System#nanoTime()} pair around the whole range).
     *
     * @throws IllegalStateException when the allocator refuses an allocation the trace expects to fit
     */
    long replay(int from, int to);

    /** The allocator's accounting now, for the lmcache4j allocators. */
    default Optional<AllocatorStats> stats() {
        return Optional.empty();
    }

    /** Facts worth reporting after the replays (for example how often the pool went to the system), or empty. */
    default String notes() {
        return "";
    }

    /** Bytes of memory the allocator holds from the system now, where it says so. */
    default long footprintBytes() {
        return -1;
    }

    /**
     * Releases the memory; throws when anything is still allocated (the lmcache4j allocators list
     * the leaked objects).
     */
    @Override
    void close();

    /** Arena options for the benchmark pools: plain anonymous mmap, never touched, never pinned. */
    private static HostArena untouchedArena(long bytes) {
        return HostArena.allocate(bytes, new HostArenaOptions(false, OptionalInt.empty(), false, false, false));
    }

    private static IllegalStateException refused(Kind kind, AllocationTrace trace, int op) {
        return new IllegalStateException(kind.displayName() + " refused op " + op + " of the trace (a "
                + trace.shapeBytes()[trace.shape(op)] + "-byte allocation into slot " + trace.slot(op)
                + "); the trace was generated to fit. " + trace);
    }

    private static void checkAllFreed(Object[] live, Kind kind) {
        for (int i = 0; i < live.length; i++) {
            if (live[i] != null) {
                throw new IllegalStateException(kind.displayName() + ": slot " + i
                        + " still holds an allocation; replays must run the whole trace before close");
            }
        }
    }

    /**
     * What the lmcache4j allocators' benches share: the trace, the slots of live objects, and the
     * allocator's stats, footprint and close. Each keeps its own replay loop over its own allocator
     * type (see the interface), which is why the loops are not shared.
     */
    abstract sealed class LmcacheAllocator<A extends MemoryAllocator> implements BenchedAllocator permits Tensor, Paged {
        final AllocationTrace trace;
        final A allocator;
        final MemoryObj[] live;

        LmcacheAllocator(AllocationTrace trace, A allocator) {
            this.trace = trace;
            this.allocator = allocator;
            this.live = new MemoryObj[trace.slotCount()];
        }

        @Override
        public Optional<AllocatorStats> stats() {
            return Optional.of(allocator.stats());
        }

        @Override
        public long footprintBytes() {
            return allocator.stats().capacityBytes();
        }

        @Override
        public void close() {
            checkAllFreed(live, kind());
            allocator.close();
        }
    }

    /** {@link TensorMemoryAllocator} over one untouched mmap region of the trace's pool size. */
    final class Tensor extends LmcacheAllocator<TensorMemoryAllocator> {
        Tensor(AllocationTrace trace) {
            super(trace, TensorMemoryAllocator.create("bench-tensor", untouchedArena(trace.config().poolBytes()),
                    TensorMemoryAllocator.DEFAULT_ALIGNMENT));
        }

        @Override
        public Kind kind() {
            return Kind.TENSOR;
        }

        @Override
        public String description() {
            return allocator + ", alignment " + allocator.alignment() + ", pool "
                    + HostArenas.formatBytes(trace.config().poolBytes()) + " of untouched mmap memory";
        }

        @Override
        public long replay(int from, int to) {
            final int[] ops = trace.opShapes();
            final int[] slots = trace.opSlots();
            final TensorShape[] shapes = trace.shapes();
            final MemoryObj[] live = this.live;
            final TensorMemoryAllocator allocator = this.allocator;
            long start = System.nanoTime();
            for (int i = from; i < to; i++) {
                int shape = ops[i];
                if (shape >= 0) {
                    Optional<MemoryObj> obj = allocator.allocate(shapes[shape], AllocationTrace.DTYPE, AllocationTrace.FORMAT);
                    if (obj.isEmpty()) {
                        throw refused(kind(), trace, i);
                    }
                    live[slots[i]] = obj.get();
                } else {
                    MemoryObj obj = live[slots[i]];
                    live[slots[i]] = null;
                    obj.release();
                }
            }
            return System.nanoTime() - start;
        }
    }

    /**
     * {@link PagedTensorMemoryAllocator} with one page per largest chunk (partial chunks take a
     * whole page) and enough pages for the trace's peak live count at the occupancy target.
     */
    final class Paged extends LmcacheAllocator<PagedTensorMemoryAllocator> {
        private final long pages;

        Paged(AllocationTrace trace) {
            this(trace, (long) Math.ceil(trace.maxLive() / trace.config().occupancy()));
        }

        private Paged(AllocationTrace trace, long pages) {
            super(trace, PagedTensorMemoryAllocator.create("bench-paged", untouchedArena(pages * trace.largestRequestBytes()),
                    trace.largestShape(), AllocationTrace.DTYPE));
            this.pages = pages;
        }

        @Override
        public Kind kind() {
            return Kind.PAGED;
        }

        @Override
        public String description() {
            return allocator + " (page = " + trace.largestShape() + " " + AllocationTrace.DTYPE.torchName()
                    + ", " + HostArenas.formatBytes(pages * allocator.pageSize()) + " of untouched mmap memory)";
        }

        @Override
        public long replay(int from, int to) {
            final int[] ops = trace.opShapes();
            final int[] slots = trace.opSlots();
            final TensorShape[] shapes = trace.shapes();
            final MemoryObj[] live = this.live;
            final PagedTensorMemoryAllocator allocator = this.allocator;
            long start = System.nanoTime();
            for (int i = from; i < to; i++) {
                int shape = ops[i];
                if (shape >= 0) {
                    Optional<MemoryObj> obj = allocator.allocate(shapes[shape], AllocationTrace.DTYPE, AllocationTrace.FORMAT);
                    if (obj.isEmpty()) {
                        throw refused(kind(), trace, i);
                    }
                    live[slots[i]] = obj.get();
                } else {
                    MemoryObj obj = live[slots[i]];
                    live[slots[i]] = null;
                    obj.release();
                }
            }
            return System.nanoTime() - start;
        }
    }

    /**
     * Netty's {@link PooledByteBufAllocator}, direct buffers, one direct arena (the replay is single
     * threaded), default page size and caches, and Netty's largest chunk size (page size &lt;&lt;
     * {@value #MAX_ORDER}: 128 MiB with 8 KiB pages). That is its best case on this trace:
     * with the default 4 MiB chunks every 4 MiB request takes a chunk of its own, allocated from
     * the system (and zeroed) on allocate and released on free, about 150 µs per pair.
     */
    final class Netty implements BenchedAllocator {
        /** Netty's largest {@code maxOrder}: chunks of page size × 2^14. */
        private static final int MAX_ORDER = 14;

        private final AllocationTrace trace;
        private final PooledByteBufAllocator allocator;
        private final ByteBuf[] live;
        private final int[] sizes;
        private final int pageSize;
        private final int maxOrder;

        Netty(AllocationTrace trace) {
            this.trace = trace;
            this.pageSize = PooledByteBufAllocator.defaultPageSize();
            this.maxOrder = MAX_ORDER;
            if (((long) pageSize << maxOrder) < trace.largestRequestBytes()) {
                throw new IllegalArgumentException("Netty's largest chunk (" + ((long) pageSize << maxOrder)
                        + " bytes) is smaller than the trace's largest request (" + trace.largestRequestBytes() + ")");
            }
            this.allocator = new PooledByteBufAllocator(true, 0, 1, pageSize, maxOrder,
                    PooledByteBufAllocator.defaultSmallCacheSize(), PooledByteBufAllocator.defaultNormalCacheSize(),
                    true);
            this.live = new ByteBuf[trace.slotCount()];
            long[] bytes = trace.shapeBytes();
            this.sizes = new int[bytes.length];
            for (int i = 0; i < bytes.length; i++) {
                sizes[i] = Math.toIntExact(bytes[i]);
            }
        }

        @Override
        public Kind kind() {
            return Kind.NETTY;
        }

        @Override
        public String description() {
            return "PooledByteBufAllocator(direct, 1 arena, page " + pageSize + ", chunk "
                    + HostArenas.formatBytes((long) pageSize << maxOrder) + " (maxOrder " + maxOrder
                    + "), default caches), netty " + nettyVersion() + ", leak detection "
                    + io.netty.util.ResourceLeakDetector.getLevel();
        }

        /** The netty-buffer version on the class path. */
        public static String nettyVersion() {
            io.netty.util.Version v = io.netty.util.Version.identify().get("netty-buffer");
            return v != null ? v.artifactVersion() : "unknown";
        }

        @Override
        public long replay(int from, int to) {
            final int[] ops = trace.opShapes();
            final int[] slots = trace.opSlots();
            final int[] sizes = this.sizes;
            final ByteBuf[] live = this.live;
            final PooledByteBufAllocator allocator = this.allocator;
            long start = System.nanoTime();
            for (int i = from; i < to; i++) {
                int shape = ops[i];
                if (shape >= 0) {
                    int size = sizes[shape];
                    live[slots[i]] = allocator.directBuffer(size, size);
                } else {
                    ByteBuf buf = live[slots[i]];
                    live[slots[i]] = null;
                    buf.release();
                }
            }
            return System.nanoTime() - start;
        }

        @Override
        public long footprintBytes() {
            return allocator.metric().usedDirectMemory();
        }

        @Override
        public String notes() {
            long allocated = 0;
            long freed = 0;
            for (PoolArenaMetric arena : allocator.metric().directArenas()) {
                allocated += arena.numChunkAllocations();
                freed += arena.numChunkDeallocations();
            }
            return "over all replays Netty allocated " + allocated + " chunks of "
                    + HostArenas.formatBytes((long) pageSize << maxOrder) + " and freed " + freed
                    + " (a chunk that empties goes back to the system; a new one is allocated and zeroed)";
        }

        @Override
        @SuppressWarnings("deprecation") // freeThreadLocalCache: the only call that empties this thread's cache
        public void close() {
            checkAllFreed(live, kind());
            allocator.freeThreadLocalCache(); // buffers parked in the thread cache count as active
            long active = 0;
            for (PoolArenaMetric arena : allocator.metric().directArenas()) {
                active += arena.numActiveAllocations();
            }
            if (active != 0) {
                throw new IllegalStateException("Netty reports " + active + " direct buffers still allocated");
            }
            // PooledByteBufAllocator has no close: its chunks go when it becomes unreachable.
        }
    }

    /** {@code malloc(3)}/{@code free(3)} through {@link Posix}: the FFM downcall cost plus glibc's. */
    final class Malloc implements BenchedAllocator {
        private final AllocationTrace trace;
        private final MemorySegment[] live;

        Malloc(AllocationTrace trace) {
            this.trace = trace;
            this.live = new MemorySegment[trace.slotCount()];
        }

        @Override
        public Kind kind() {
            return Kind.MALLOC;
        }

        @Override
        public String description() {
            return "Posix.malloc/Posix.free (FFM downcalls into the C library's malloc)";
        }

        @Override
        public long replay(int from, int to) {
            final int[] ops = trace.opShapes();
            final int[] slots = trace.opSlots();
            final long[] bytes = trace.shapeBytes();
            final MemorySegment[] live = this.live;
            long start = System.nanoTime();
            for (int i = from; i < to; i++) {
                int shape = ops[i];
                if (shape >= 0) {
                    live[slots[i]] = Posix.malloc(bytes[shape]);
                } else {
                    MemorySegment segment = live[slots[i]];
                    live[slots[i]] = null;
                    Posix.free(segment);
                }
            }
            return System.nanoTime() - start;
        }

        @Override
        public void close() {
            checkAllFreed(live, kind());
        }
    }
}
