package lmcache4j.allocator.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class LeakTrackerTest {

    @Test
    void anUnreachableTrackedObjectRunsItsAction() throws Exception {
        CountDownLatch ran = new CountDownLatch(1);
        register(new Object(), ran::countDown);
        for (int i = 0; i < 100 && ran.getCount() > 0; i++) {
            System.gc();
            ran.await(100, TimeUnit.MILLISECONDS);
        }
        assertEquals(0, ran.getCount(), "the leak action never ran");
    }

    @Test
    void aReleasedObjectNeverRunsItsAction() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch control = new CountDownLatch(1);
        for (int i = 0; i < 1000; i++) {
            LeakDetection.released(register(new Object(), runs::incrementAndGet));
        }
        // A control object left registered shows the cleaner has had its chance at the others.
        register(new Object(), control::countDown);
        for (int i = 0; i < 100 && control.getCount() > 0; i++) {
            System.gc();
            control.await(100, TimeUnit.MILLISECONDS);
        }
        assertEquals(0, control.getCount(), "the cleaner never ran");
        System.gc();
        Thread.sleep(200); // the cleaner's queue holds no order: give any stragglers their turn
        assertEquals(0, runs.get(), "a properly released object was reported as a leak");
        LeakDetection.released(null); // untracked objects carry no tracker: a no-op
    }

    /** Registers in a separate frame so that {@code obj} is unreachable once this returns. */
    private static LeakDetection.Tracker register(Object obj, Runnable action) {
        return LeakDetection.register(obj, action);
    }
}
