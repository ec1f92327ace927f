package lmcache4j.engine.connector.internal;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.cuda.cpu.StreamingCopy;
import lmcache4j.engine.connector.HostCopyRoutine;
import lmcache4j.engine.connector.PagedKvCache;

/**
 * Carries out one {@link CopyPlan} on several threads: the calling thread and up to
 * {@code threads - 1} helper threads (daemons, started on first need, stopped by {@link #close()}).
 *
 * <p>One thread gathering 32 KiB runs reaches about half of what the memory system gives one large
 * copy; two or more threads together get close to it. A plan is cut into pieces of consecutive runs
 * that any participant claims from a shared counter. The caller claims pieces too and only ever waits
 * for pieces a helper has already claimed (so is copying now): a helper that is busy elsewhere, or
 * not scheduled at all, just finds nothing left when it comes, and the caller has done the work
 * itself. Helpers are asked only while idle, and only as many as the plan's bytes justify
 * ({@link #MIN_BYTES_PER_THREAD} each), so a small plan or a busy pool costs nothing but the caller's
 * own copy.
 *
 * <p>Each participant writes with streaming stores ({@link StreamingCopy}) where the machine offers
 * them and the plan is at least {@link #MIN_STREAMING_PLAN_BYTES} (4 MiB): a gather's 32 KiB runs written
 * through the cache cost a read of every destination line first, which is what kept one thread at
 * half of a large copy. Runs the routine cannot take (misaligned, not a whole number of its steps)
 * are copied with {@link MemorySegment#copy}, in plan order. Another {@link HostCopyRoutine} may be
 * chosen instead (to measure them against each other); it too copies plans of 4 MiB or more.
 *
 * <p>Thread-safe: many callers may run plans at once (they share the helpers). A closed pool, or a
 * plan whose memory other threads cannot access (a confined arena), runs on the caller alone.
 */
public final class HostCopyPool implements AutoCloseable {
    /** Below this many bytes per participant, handing work to another thread costs more than it saves. */
    public static final long MIN_BYTES_PER_THREAD = 1L << 20;
    /**
     * Bytes of one piece: small enough that the participants finish within a short piece of each
     * other (the caller waits for the last one), large enough that claiming one costs nothing and
     * that the streaming copy, which prefetches each run's successor within a piece, rarely meets a
     * piece's end (1 MiB pieces: two-thread store 0.85-1.00 of a contiguous copy where 256 KiB
     * pieces gave 0.80-0.87).
     */
    private static final long PIECE_BYTES = 1L << 20;
    /** The most threads a pool sized from the machine gets: a few saturate a socket's memory bandwidth. */
    public static final int MAX_DEFAULT_THREADS = 8;
    /**
     * The smallest plan copied with streaming stores: twice a large per-core L2 (and above the 2.5 MiB
     * at which the JDK's own copy stub starts streaming). A smaller destination may still be in the
     * cache when it is next read, which streaming stores would have sent to memory: with 1 MiB chunks
     * {@code bench concurrent} ran 15% slower streamed, while 32 MiB chunks copy 1.3-1.6 times faster.
     */
    public static final long MIN_STREAMING_PLAN_BYTES = 4L << 20;
    /** Runs a participant hands to the streaming routine in one downcall. */
    private static final int STREAMING_BATCH_RUNS = 64;
    /** How long a waiting caller spins before it parks (the last pieces usually end within this). */
    private static final long SPIN_NANOS = 20_000;

    private static final AtomicInteger POOLS = new AtomicInteger();

    private final int threads;
    /** The routine for plans of {@link #MIN_STREAMING_PLAN_BYTES} or more; {@code SEGMENT_COPY} when off. */
    private final HostCopyRoutine routine;
    /** Why {@link #routine} is {@code SEGMENT_COPY}: turned off, or what the machine lacks. */
    private final String offReason;
    private final ThreadFactory helperFactory;
    private final BlockingQueue<Batch> tickets = new LinkedBlockingQueue<>();
    private final LongAdder copiedBytes = new LongAdder();
    private final LongAdder streamedBytes = new LongAdder();
    private final AtomicInteger idleHelpers = new AtomicInteger();
    private final Object startLock = new Object();
    private volatile Thread[] helpers;
    private volatile boolean closed;

    /**
     * A pool in which a plan runs on at most {@code threads} threads, the caller included
     * ({@code 1}: the caller alone, no thread is ever started), with streaming stores where the
     * machine offers them.
     */
    public HostCopyPool(int threads) {
        this(threads, true);
    }

    /**
     * As {@link #HostCopyPool(int)}; {@code streamingStores} false copies every run with
     * {@link MemorySegment#copy} (ordinary, cached stores).
     */
    public HostCopyPool(int threads, boolean streamingStores) {
        this(threads, streamingStores ? HostCopyRoutine.STREAMING_STORES : HostCopyRoutine.SEGMENT_COPY);
    }

    /**
     * As {@link #HostCopyPool(int)}, plans of 4 MiB or more copied with {@code routine}
     * ({@link MemorySegment#copy} where this machine does not run it).
     */
    public HostCopyPool(int threads, HostCopyRoutine routine) {
        // Named and made by OwnedThreads; close() joins the helpers itself, unbounded: one may be mid-copy.
        this(threads, routine, new OwnedThreads().platformFactory("copy-" + POOLS.incrementAndGet()));
    }

    /** As {@link #HostCopyPool(int)} with helpers made by {@code helperFactory} (tests hold them back with it). */
    HostCopyPool(int threads, ThreadFactory helperFactory) {
        this(threads, HostCopyRoutine.STREAMING_STORES, helperFactory);
    }

    private HostCopyPool(int threads, HostCopyRoutine wanted, ThreadFactory helperFactory) {
        if (threads < 1 || threads > 1024) {
            throw new IllegalArgumentException("copy threads must be from 1 to 1024, was " + threads);
        }
        this.threads = threads;
        this.routine = wanted.isAvailable() ? wanted : HostCopyRoutine.SEGMENT_COPY;
        this.offReason = wanted == HostCopyRoutine.SEGMENT_COPY ? "turned off"
                : wanted.unavailabilityCause().map(Throwable::getMessage).orElse("");
        this.helperFactory = Objects.requireNonNull(helperFactory, "helperFactory");
    }

    /** The thread count sized from the machine: its cores, at most {@value #MAX_DEFAULT_THREADS}. */
    public static int machineThreads() {
        return Math.clamp(Runtime.getRuntime().availableProcessors(), 1, MAX_DEFAULT_THREADS);
    }

    /** The most threads, the caller included, one plan runs on. */
    public int threads() {
        return threads;
    }

    /** The routine plans of 4 MiB or more are copied with ({@code SEGMENT_COPY} when the one asked for is not available). */
    public HostCopyRoutine routine() {
        return routine;
    }

    /**
     * How this pool writes plans of 4 MiB or more: {@code avx2} or {@code sse2} streaming stores,
     * {@code memcpy}, or {@code off} with the reason (turned off, or what the machine lacks).
     */
    public String streamingStores() {
        return switch (routine) {
            case STREAMING_STORES -> StreamingCopy.machine().orElseThrow().isa().label();
            case LIBC_MEMCPY -> routine.label();
            case SEGMENT_COPY -> "off (" + offReason + ")";
        };
    }

    /** Bytes of every plan this pool has copied, however they were written. */
    public long copiedBytes() {
        return copiedBytes.sum();
    }

    /** Of {@link #copiedBytes()}, the bytes written by the pool's {@link #routine()} (the rest by {@link MemorySegment#copy}). */
    public long streamedBytes() {
        return streamedBytes.sum();
    }

    /** How many threads a plan of {@code bytes} bytes would use at most: never more than its bytes justify. */
    public int threadsFor(long bytes) {
        return (int) Math.clamp(bytes / MIN_BYTES_PER_THREAD, 1, threads);
    }

    /** Helper threads started so far (0 until a plan first needs one, and after {@link #close()}). */
    public int startedHelpers() {
        Thread[] h = helpers;
        return h == null ? 0 : (int) Arrays.stream(h).filter(Thread::isAlive).count();
    }

    /** Copies every run of {@code plan} from the paged buffers into {@code object}; returns when all are done. */
    public void gather(CopyPlan plan, PagedKvCache kv, MemorySegment object) {
        run(plan, kv, object, true);
    }

    /** Copies every run of {@code plan} from {@code object} into the paged buffers; returns when all are done. */
    public void scatter(CopyPlan plan, MemorySegment object, PagedKvCache kv) {
        run(plan, kv, object, false);
    }

    private void run(CopyPlan plan, PagedKvCache kv, MemorySegment object, boolean gather) {
        int wanted = Math.min(threadsFor(plan.totalBytes()), plan.runs());
        int asked = wanted <= 1 || closed ? 0 : askHelpers(wanted - 1, kv, object);
        boolean stream = routine != HostCopyRoutine.SEGMENT_COPY && plan.totalBytes() >= MIN_STREAMING_PLAN_BYTES;
        try (RunCopier own = RunCopier.of(stream ? routine : HostCopyRoutine.SEGMENT_COPY, STREAMING_BATCH_RUNS)) {
            if (asked == 0) {
                streamedBytes.add(copyRuns(plan, kv, object, gather, 0, plan.runs(), own));
            } else {
                int pieces = (int) Math.clamp(plan.totalBytes() / PIECE_BYTES, asked + 1, plan.runs());
                Batch batch = new Batch(plan, kv, object, gather, pieces, stream, streamedBytes);
                for (int i = 0; i < asked; i++) {
                    tickets.add(batch);
                }
                batch.work(own);
                batch.awaitClaimedPieces();
            }
        }
        copiedBytes.add(plan.totalBytes());
    }

    /**
     * How many helpers to ask (at most {@code wanted}, and only idle ones), starting them on first
     * need; 0 when the memory cannot be reached from them.
     */
    private int askHelpers(int wanted, PagedKvCache kv, MemorySegment object) {
        Thread[] h = helpers;
        if (h == null) {
            h = startHelpers();
            if (h == null) {
                return 0; // closed meanwhile
            }
        }
        if (!accessibleBy(h[0], kv, object)) {
            return 0;
        }
        return Math.min(wanted, idleHelpers.get());
    }

    private static boolean accessibleBy(Thread helper, PagedKvCache kv, MemorySegment object) {
        if (!object.isAccessibleBy(helper)) {
            return false;
        }
        List<MemorySegment> layers = kv.layers();
        for (int i = 0; i < layers.size(); i++) {
            if (!layers.get(i).isAccessibleBy(helper)) {
                return false;
            }
        }
        return true;
    }

    private Thread[] startHelpers() {
        synchronized (startLock) {
            if (closed) {
                return null;
            }
            if (helpers == null) {
                Thread[] started = new Thread[threads - 1];
                for (int i = 0; i < started.length; i++) {
                    started[i] = helperFactory.newThread(this::helperLoop);
                }
                idleHelpers.addAndGet(started.length);
                for (Thread t : started) {
                    t.start();
                }
                helpers = started;
            }
            return helpers;
        }
    }

    private void helperLoop() {
        // The helper's own copier (a streaming run list is confined to it), freed when it stops.
        try (RunCopier own = RunCopier.of(routine, STREAMING_BATCH_RUNS)) {
            while (!closed) {
                Batch batch = tickets.poll(1, TimeUnit.SECONDS);
                if (batch == null) {
                    continue;
                }
                idleHelpers.decrementAndGet();
                try {
                    batch.work(batch.stream ? own : RunCopier.SegmentCopy.INSTANCE);
                } finally {
                    idleHelpers.incrementAndGet();
                }
            }
        } catch (InterruptedException e) {
            // close() interrupts: done
        }
    }

    /**
     * Stops the helper threads and waits for them; plans still running finish on their callers
     * (a helper stops only between pieces, and a piece it has not claimed is copied by its caller).
     * Later plans run on the caller alone.
     */
    @Override
    public void close() {
        Thread[] h;
        synchronized (startLock) {
            if (closed) {
                return;
            }
            closed = true;
            h = helpers;
        }
        if (h == null) {
            return;
        }
        for (Thread t : h) {
            t.interrupt();
        }
        boolean interrupted = false;
        for (Thread t : h) {
            while (t.isAlive()) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        tickets.clear();
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Copies runs {@code [from, to)} through {@code copier}; every run is written when this returns.
     * Returns the bytes the copier's routine wrote.
     */
    private static long copyRuns(CopyPlan plan, PagedKvCache kv, MemorySegment object, boolean gather, int from, int to,
                                 RunCopier copier) {
        List<MemorySegment> layers = kv.layers();
        long streamed = 0;
        try {
            for (int i = from; i < to; i++) {
                MemorySegment paged = layers.get(plan.layer(i));
                MemorySegment src = gather ? paged : object;
                MemorySegment dst = gather ? object : paged;
                long srcOffset = gather ? plan.pagedOffset(i) : plan.objectOffset(i);
                long dstOffset = gather ? plan.objectOffset(i) : plan.pagedOffset(i);
                streamed += copier.copy(src, srcOffset, dst, dstOffset, plan.length(i));
            }
            copier.flush();
            return streamed;
        } catch (RuntimeException | Error e) {
            copier.discard(); // a helper's copier outlives this plan: nothing of it may be copied later
            throw e;
        }
    }

    /** One plan being copied: its pieces, claimed by counter, and how many are done. */
    private static final class Batch {
        private final CopyPlan plan;
        private final PagedKvCache kv;
        private final MemorySegment object;
        private final boolean gather;
        private final boolean stream;
        private final LongAdder streamedBytes;
        private final int pieces;
        private final Thread caller = Thread.currentThread();
        private final AtomicInteger nextPiece = new AtomicInteger();
        private final AtomicInteger donePieces = new AtomicInteger();
        private volatile Throwable failure;

        Batch(CopyPlan plan, PagedKvCache kv, MemorySegment object, boolean gather, int pieces, boolean stream,
              LongAdder streamedBytes) {
            this.plan = plan;
            this.kv = kv;
            this.object = object;
            this.gather = gather;
            this.pieces = pieces;
            this.stream = stream;
            this.streamedBytes = streamedBytes;
        }

        /**
         * Claims and copies pieces until none is left, through the participant's own
         * {@code copier}; a helper arriving after the last claim does nothing.
         */
        void work(RunCopier copier) {
            int p;
            while ((p = nextPiece.getAndIncrement()) < pieces) {
                try {
                    int runs = plan.runs();
                    streamedBytes.add(copyRuns(plan, kv, object, gather, (int) ((long) p * runs / pieces),
                            (int) ((long) (p + 1) * runs / pieces), copier));
                } catch (Throwable t) {
                    failure = t;
                } finally {
                    if (donePieces.incrementAndGet() == pieces && Thread.currentThread() != caller) {
                        LockSupport.unpark(caller);
                    }
                }
            }
        }

        /** Waits (caller only) for the pieces helpers claimed; every piece is claimed once the caller's own work() returns. */
        void awaitClaimedPieces() {
            long spinUntil = System.nanoTime() + SPIN_NANOS;
            while (donePieces.get() < pieces) {
                if (System.nanoTime() - spinUntil < 0) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(this, 100_000);
                }
            }
            Throwable t = failure;
            if (t instanceof RuntimeException e) {
                throw e;
            }
            if (t instanceof Error e) {
                throw e;
            }
        }
    }
}
