package lmcache4j.allocator.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * The lock around an allocator's free-block index: held for well under a microsecond, so it spins
 * briefly, then backs off by parking; not reentrant, not fair.
 *
 * <p>Why not {@code ReentrantLock}: an uncontended acquire is one compare-and-set either way, but
 * {@code ReentrantLock.unlock()} is a volatile store (a full fence on x86) followed by a check for
 * queued waiters, and an allocate+free pair locks twice. Here unlock is a release store, which on
 * x86 is a plain store; together that was about a tenth of a pair. Acquire (CAS) and release
 * (store-release) give the critical sections the same happens-before order a lock does.
 */
public final class PoolLock {
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(PoolLock.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Spins before the first park: a holder normally leaves within this. */
    private static final int SPINS = 200;
    private static final long MAX_PARK_NANOS = 100_000;

    @SuppressWarnings("unused") // accessed through STATE
    private volatile int state; // 0 free, 1 held

    /** Acquires the lock, waiting as long as it takes. */
    public void lock() {
        if (!STATE.compareAndSet(this, 0, 1)) {
            lockContended();
        }
    }

    private void lockContended() {
        long park = 1_000;
        for (int i = 0; ; i++) {
            // Test before the CAS: spinning on a read keeps the cache line shared until it is free.
            if ((int) STATE.getOpaque(this) == 0 && STATE.compareAndSet(this, 0, 1)) {
                return;
            }
            if (i < SPINS) {
                Thread.onSpinWait();
            } else {
                // A holder that lost its CPU (2 cores, more threads): stop burning ours.
                LockSupport.parkNanos(park);
                park = Math.min(park * 2, MAX_PARK_NANOS);
            }
        }
    }

    /** Releases the lock; only the thread that holds it may call this. */
    public void unlock() {
        STATE.setRelease(this, 0);
    }

    /** Whether some thread holds the lock now (for assertions and diagnostics). */
    public boolean isLocked() {
        return (int) STATE.getVolatile(this) != 0;
    }
}
