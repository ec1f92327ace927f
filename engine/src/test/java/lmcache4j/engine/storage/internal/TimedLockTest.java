package lmcache4j.engine.storage.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;

/** The CPU tier lock's counters: acquisitions, contended acquisitions, wait and hold time; reentry is not counted. */
class TimedLockTest {
    @Test
    void anUncontendedLockCountsItsHoldsAndNoWait() throws Exception {
        long start = System.nanoTime();
        TimedLock lock = new TimedLock();
        lock.lock();
        lock.lock(); // reentrant: neither counted nor timed again
        Thread.sleep(5);
        lock.unlock();
        lock.unlock();
        assertEquals(1, lock.acquisitions());
        assertEquals(0, lock.contended());
        assertEquals(0, lock.waitNanos());
        assertTrue(lock.holdNanos() >= 5_000_000, "held at least the 5 ms sleep: " + lock.holdNanos());
        assertTrue(lock.holdNanos() <= System.nanoTime() - start, "held no longer than the test ran: " + lock.holdNanos());
        assertTrue(!lock.isLocked());
    }

    @Test
    void aThreadThatFindsTheLockHeldCountsItsWait() throws Exception {
        long start = System.nanoTime();
        TimedLock lock = new TimedLock();
        CountDownLatch held = new CountDownLatch(1);
        Thread holder = Thread.ofPlatform().start(() -> {
            lock.lock();
            try {
                held.countDown();
                Thread.sleep(30);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                lock.unlock();
            }
        });
        held.await();
        lock.lock(); // waits for the holder's 30 ms
        lock.unlock();
        holder.join();
        assertEquals(2, lock.acquisitions());
        assertEquals(1, lock.contended());
        assertTrue(lock.waitNanos() >= 10_000_000, "waited for most of the holder's sleep: " + lock.waitNanos());
        assertTrue(lock.waitNanos() <= System.nanoTime() - start, "waited no longer than the test ran: " + lock.waitNanos());
        assertTrue(lock.holdNanos() >= 30_000_000, "the holder held it 30 ms: " + lock.holdNanos());
    }
}
