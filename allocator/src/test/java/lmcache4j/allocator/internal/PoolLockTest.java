package lmcache4j.allocator.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class PoolLockTest {
    private long counter; // guarded by the lock under test, deliberately plain
    private long shadow;

    @Test
    void excludesAndPublishesUnderContentionFromMoreThreadsThanCores() throws Exception {
        PoolLock lock = new PoolLock();
        int threads = 6;
        int rounds = 200_000;
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            workers.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < rounds; i++) {
                    lock.lock();
                    try {
                        // Two plain fields that must always agree inside the critical section.
                        long c = counter;
                        if (shadow != c) {
                            throw new AssertionError("a critical section saw another half-way: " + c + " vs " + shadow);
                        }
                        counter = c + 1;
                        shadow = c + 1;
                    } finally {
                        lock.unlock();
                    }
                }
            }));
        }
        start.countDown();
        for (Thread w : workers) {
            w.join(TimeUnit.SECONDS.toMillis(50));
            assertFalse(w.isAlive(), "a worker is stuck");
        }
        lock.lock();
        try {
            assertEquals((long) threads * rounds, counter);
            assertEquals(counter, shadow);
        } finally {
            lock.unlock();
        }
        assertFalse(lock.isLocked());
    }

    @Test
    void aWaiterParksWhileAHolderSleepsAndGetsTheLockAfter() throws Exception {
        PoolLock lock = new PoolLock();
        lock.lock();
        assertTrue(lock.isLocked());
        CountDownLatch acquired = new CountDownLatch(1);
        Thread waiter = Thread.ofVirtual().start(() -> {
            lock.lock();
            acquired.countDown();
            lock.unlock();
        });
        assertFalse(acquired.await(200, TimeUnit.MILLISECONDS), "the lock was taken twice");
        lock.unlock();
        assertTrue(acquired.await(10, TimeUnit.SECONDS), "the waiter never got the lock");
        waiter.join();
        assertFalse(lock.isLocked());
    }
}
