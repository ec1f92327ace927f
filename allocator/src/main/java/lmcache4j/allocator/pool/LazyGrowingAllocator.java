package lmcache4j.allocator.pool;

import java.lang.System.Logger.Level;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.LongFunction;

import lmcache4j.allocator.AllocatorStats;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.host.HostArenas;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;

/**
 * A pool that starts small and grows to its target in the background (LMCache spec §2.8): it
 * begins with {@code initialRatio} of the target; once usage reaches {@code expandTriggerRatio} of
 * the current capacity, one background thread appends regions of {@code stepRatio} of the target
 * until the target is reached. It never shrinks. Each region is its own {@link HostArena} and no
 * object spans two, so growth never moves or splits live data.
 *
 * <p>A region that cannot be made (memory refused) stops growth with one warning; the pool keeps
 * working at the capacity it has.
 */
public final class LazyGrowingAllocator implements MemoryAllocator {
    private static final System.Logger LOG = System.getLogger(LazyGrowingAllocator.class.getName());

    /** LMCache's defaults: {@code lazy_memory_initial_ratio}, {@code _step_ratio}, {@code _expand_trigger_ratio}. */
    public static final double DEFAULT_INITIAL_RATIO = 0.2;
    public static final double DEFAULT_STEP_RATIO = 0.1;
    public static final double DEFAULT_EXPAND_TRIGGER_RATIO = 0.5;

    private final TensorMemoryAllocator pool;
    private final long targetBytes;
    private final long stepBytes;
    private final double triggerRatio;
    private final LongFunction<HostArena> regionFactory;
    private final Object growthLock = new Object();
    private final OwnedThreads threads = new OwnedThreads();
    private volatile Thread grower;
    private volatile boolean closing;

    /**
     * @param regionFactory makes a region of the given size, for example
     *                      {@code bytes -> HostArena.allocate(bytes, options)}
     */
    public LazyGrowingAllocator(String name, long targetBytes, long alignment, double initialRatio, double stepRatio,
                                double expandTriggerRatio, LongFunction<HostArena> regionFactory) {
        if (targetBytes <= 0) {
            throw new IllegalArgumentException("target size must be positive, was " + targetBytes);
        }
        checkRatio("initial ratio", initialRatio);
        checkRatio("step ratio", stepRatio);
        checkRatio("expand trigger ratio", expandTriggerRatio);
        this.regionFactory = Objects.requireNonNull(regionFactory, "regionFactory");
        this.targetBytes = targetBytes;
        this.stepBytes = Math.max(alignment, alignDown((long) (targetBytes * stepRatio), alignment));
        this.triggerRatio = expandTriggerRatio;
        long initial = Math.max(alignment, alignDown((long) (targetBytes * initialRatio), alignment));
        this.pool = TensorMemoryAllocator.create(name, regionFactory.apply(Math.min(initial, targetBytes)), alignment);
    }

    private static void checkRatio(String what, double ratio) {
        if (!(ratio > 0 && ratio <= 1)) {
            throw new IllegalArgumentException(what + " must be in (0, 1], was " + ratio);
        }
    }

    private static long alignDown(long bytes, long alignment) {
        return bytes & -alignment;
    }

    @Override
    public String name() {
        return pool.name();
    }

    /** The size the pool grows to. */
    public long targetBytes() {
        return targetBytes;
    }

    @Override
    public Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format) {
        Optional<MemoryObj> obj = pool.allocate(shape, dtype, format);
        maybeStartGrowth();
        return obj;
    }

    @Override
    public Optional<List<MemoryObj>> allocateBatch(TensorShape shape, DType dtype, MemoryFormat format, int count) {
        Optional<List<MemoryObj>> objs = pool.allocateBatch(shape, dtype, format, count);
        maybeStartGrowth();
        return objs;
    }

    @Override
    public void releaseAll(Collection<MemoryObj> objects) {
        pool.releaseAll(objects);
    }

    @Override
    public AllocatorStats stats() {
        return pool.stats();
    }

    @Override
    public void memcheck() {
        pool.memcheck();
    }

    /** Waits until background growth has finished (reached the target, failed, or never started). */
    public void awaitGrowth() throws InterruptedException {
        Thread t;
        synchronized (growthLock) {
            t = grower;
        }
        if (t != null) {
            t.join();
        }
    }

    /** Stops growth, waits for the grower, and closes the pool (failing if objects are live). */
    @Override
    public void close() {
        closing = true;
        try {
            awaitGrowth();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        pool.close();
    }

    private void maybeStartGrowth() {
        if (grower != null || closing) {
            return;
        }
        AllocatorStats s = pool.stats();
        if (s.capacityBytes() >= targetBytes || s.usedBytes() < triggerRatio * s.capacityBytes()) {
            return;
        }
        synchronized (growthLock) {
            if (grower == null && !closing) {
                grower = threads.start("lazy-grow-" + pool.name(), this::grow);
            }
        }
    }

    private void grow() {
        while (!closing) {
            long capacity = pool.stats().capacityBytes();
            if (capacity >= targetBytes) {
                LOG.log(Level.DEBUG, () -> "pool '" + pool.name() + "' reached its target of " + HostArenas.formatBytes(targetBytes));
                return;
            }
            long step = Math.min(stepBytes, targetBytes - capacity);
            HostArena region;
            try {
                region = regionFactory.apply(step);
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "pool '" + pool.name() + "' stops growing at " + HostArenas.formatBytes(capacity)
                        + " of " + HostArenas.formatBytes(targetBytes) + ": " + e.getMessage());
                return;
            }
            try {
                pool.grow(region);
            } catch (RuntimeException e) {
                region.close(); // closed under us: do not leak the new region
                return;
            }
        }
    }
}
