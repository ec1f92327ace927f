package lmcache4j.engine.pd.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

/**
 * The frame deadlines that close a PD connection whose write (or chunk read) stalls: one passed while
 * armed closes it once, within a period or two; one disarmed in time never does; the one watchdog
 * thread looks once a period and sleeps while nothing is armed; and it lets go of disarmed
 * deadlines, so finished frames and closed connections are not held.
 */
class FrameDeadlineTest {
    private static final long PERIOD = FrameDeadline.PERIOD_MILLIS;

    @Test
    void anArmedDeadlineThatPassesClosesOnceWithinTwoPeriods() throws InterruptedException {
        CountDownLatch closed = new CountDownLatch(1);
        AtomicInteger closes = new AtomicInteger();
        FrameDeadline d = new FrameDeadline(() -> {
            closes.incrementAndGet();
            closed.countDown();
        });
        long t0 = System.nanoTime();
        d.arm(TimeUnit.MILLISECONDS.toNanos(20));
        assertTrue(closed.await(20 + 10 * PERIOD, TimeUnit.MILLISECONDS), "the stalled frame's connection is closed");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 20, "not before its deadline: " + ms + " ms");
        assertTrue(d.expired());
        Thread.sleep(3 * PERIOD);
        assertEquals(1, closes.get(), "closed once");
    }

    @Test
    void aDeadlineDisarmedInTimeNeverFiresAndCanBeArmedAgain() throws InterruptedException {
        AtomicInteger closes = new AtomicInteger();
        FrameDeadline d = new FrameDeadline(closes::incrementAndGet);
        for (int i = 0; i < 1_000; i++) { // frame after frame, each done well within its allowance
            d.arm(TimeUnit.MILLISECONDS.toNanos(2 * PERIOD));
            d.disarm();
        }
        Thread.sleep(4 * PERIOD);
        assertEquals(0, closes.get());
        assertFalse(d.expired());

        CountDownLatch closed = new CountDownLatch(1);
        FrameDeadline again = new FrameDeadline(closed::countDown);
        again.arm(1);
        again.disarm();
        again.arm(TimeUnit.MILLISECONDS.toNanos(10)); // re-armed after a disarm: watched again
        assertTrue(closed.await(10 + 10 * PERIOD, TimeUnit.MILLISECONDS));
    }

    @Test
    void aFailingCloseDoesNotStopTheWatchdog() throws InterruptedException {
        FrameDeadline failing = new FrameDeadline(() -> {
            throw new IllegalStateException("planted: a close that throws");
        });
        failing.arm(1);
        CountDownLatch closed = new CountDownLatch(1);
        Thread.sleep(3 * PERIOD); // the failing one has fired by now
        new FrameDeadline(closed::countDown).arm(TimeUnit.MILLISECONDS.toNanos(5));
        assertTrue(closed.await(10 * PERIOD, TimeUnit.MILLISECONDS), "deadlines armed later still close their connections");
        assertTrue(failing.expired());
    }

    @Test
    void oneWatchdogLooksOnceAPeriodAndSleepsWhileNothingIsArmed() throws InterruptedException {
        for (int round = 0; round < 3; round++) { // armed, then idle, then armed again from idle: one thread throughout
            FrameDeadline far = new FrameDeadline(() -> {
            });
            far.arm(TimeUnit.SECONDS.toNanos(30));
            Thread watchdog = watchdog();
            double running = runningShare(watchdog, 20 * PERIOD);
            assertTrue(running < 0.5, "with a deadline armed, the watchdog was running in " + Math.round(100 * running)
                    + " % of samples over " + 20 * PERIOD + " ms: it looks once a period, it does not spin");
            far.disarm();
            Thread.sleep(3 * PERIOD); // it drops the disarmed deadline and parks
            running = runningShare(watchdog, 10 * PERIOD);
            assertTrue(running < 0.5, "with nothing armed, the watchdog was running in " + Math.round(100 * running)
                    + " % of samples");
            CountDownLatch closed = new CountDownLatch(1);
            new FrameDeadline(closed::countDown).arm(TimeUnit.MILLISECONDS.toNanos(5));
            assertTrue(closed.await(10 * PERIOD, TimeUnit.MILLISECONDS), "arming wakes the idle watchdog");
            assertEquals(watchdog, watchdog(), "the same thread");
        }
    }

    /** The process's one watchdog thread (there must be exactly one). */
    private static Thread watchdog() {
        List<Thread> found = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().endsWith("pd-frame-watchdog") && t.isAlive()).toList();
        assertEquals(1, found.size(), "watchdog threads: " + found);
        return found.getFirst();
    }

    /** The share of {@code millis} in which {@code t} was running, sampled every millisecond (a parked thread is not). */
    private static double runningShare(Thread t, long millis) throws InterruptedException {
        int samples = 0;
        int running = 0;
        for (long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis); System.nanoTime() < end; samples++) {
            if (t.getState() == Thread.State.RUNNABLE) {
                running++;
            }
            Thread.sleep(1);
        }
        return (double) running / samples;
    }

    @Test
    void theWatchdogLetsGoOfDisarmedDeadlines() throws InterruptedException {
        FrameDeadline d = new FrameDeadline(() -> {
        });
        d.arm(TimeUnit.SECONDS.toNanos(30));
        d.disarm();
        WeakReference<FrameDeadline> ref = new WeakReference<>(d);
        d = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (ref.get() != null && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(PERIOD);
        }
        assertNull(ref.get(), "a disarmed deadline (a finished frame, a closed connection) is not kept by the watchdog");
    }
}
