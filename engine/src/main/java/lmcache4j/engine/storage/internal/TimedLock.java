package lmcache4j.engine.storage.internal;

import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@link ReentrantLock} that counts what it costs: acquisitions, how many found it held by
 * another thread, the time threads waited for it and the time it was held (outermost lock to
 * outermost unlock). Reentrant acquisitions are neither counted nor timed. About two clock reads
 * per acquisition; the counters are {@link LongAdder}s, so recording adds no contention of its own.
 *
 * <p>Only {@link #lock()} and {@link #unlock()} are timed: the tiers use nothing else.
 */
public final class TimedLock extends ReentrantLock {
    private final LongAdder acquisitions = new LongAdder();
    private final LongAdder contended = new LongAdder();
    private final LongAdder waitNanos = new LongAdder();
    private final LongAdder holdNanos = new LongAdder();
    /** When the outermost hold began; written and read only by the holder. */
    private long heldSince;

    @Override
    public void lock() {
        if (tryLock()) {
            if (getHoldCount() == 1) {
                acquisitions.increment();
                heldSince = System.nanoTime();
            }
            return;
        }
        long start = System.nanoTime();
        super.lock();
        long now = System.nanoTime();
        acquisitions.increment();
        contended.increment();
        waitNanos.add(now - start);
        heldSince = now;
    }

    @Override
    public void unlock() {
        if (getHoldCount() == 1) {
            holdNanos.add(System.nanoTime() - heldSince);
        }
        super.unlock();
    }

    /** Outermost acquisitions since creation. */
    public long acquisitions() {
        return acquisitions.sum();
    }

    /** Acquisitions that found the lock held by another thread and waited. */
    public long contended() {
        return contended.sum();
    }

    /** Nanoseconds threads spent waiting for the lock, summed over threads. */
    public long waitNanos() {
        return waitNanos.sum();
    }

    /** Nanoseconds the lock was held, outermost lock to unlock. */
    public long holdNanos() {
        return holdNanos.sum();
    }
}
