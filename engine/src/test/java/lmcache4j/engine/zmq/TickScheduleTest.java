package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/**
 * {@link PollerRepair}'s ticks on a clock the test moves: short for exactly a second after the
 * number of handles changed (counted from the change, not from the first tick), long after it,
 * longer with many handles, and not fooled by {@link System#nanoTime} wrapping.
 */
class TickScheduleTest {
    private static final long MS = 1_000_000;

    @Test
    void ticksAreShortForASecondAfterTheHandlesChangeAndLongAfter() {
        AtomicLong now = new AtomicLong(5 * MS);
        TickSchedule schedule = new TickSchedule(now::get);
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, schedule.nextTickMillis(1), "the first tick: a change from none");
        now.addAndGet(TickSchedule.ACTIVE_MILLIS * MS - 1);
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, schedule.nextTickMillis(1), "1 ns before the second ends");
        now.addAndGet(1);
        assertEquals(TickSchedule.IDLE_TICK_MILLIS, schedule.nextTickMillis(1), "the second is over");
        now.addAndGet(10_000 * MS);
        assertEquals(TickSchedule.IDLE_TICK_MILLIS, schedule.nextTickMillis(1), "still idle, nothing changed");
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, schedule.nextTickMillis(2), "a connect added a handle");
        now.addAndGet(600 * MS);
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, schedule.nextTickMillis(2), "within the second of that change");
        now.addAndGet(600 * MS);
        assertEquals(TickSchedule.IDLE_TICK_MILLIS, schedule.nextTickMillis(2), "the second counts from the change");
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, schedule.nextTickMillis(1), "a handle removed is a change too");
    }

    @Test
    void theSecondAfterAChangeHoldsAcrossTheClocksWrap() {
        AtomicLong now = new AtomicLong(Long.MAX_VALUE - 100 * MS);
        TickSchedule schedule = new TickSchedule(now::get);
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, schedule.nextTickMillis(3));
        now.addAndGet(500 * MS); // past Long.MAX_VALUE: wrapped to a negative time
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, schedule.nextTickMillis(3), "half a second later, across the wrap");
        now.addAndGet(600 * MS);
        assertEquals(TickSchedule.IDLE_TICK_MILLIS, schedule.nextTickMillis(3), "over a second later, across the wrap");
    }

    @Test
    void theTickGrowsTenMicrosecondsAHandleBeyondItsFloor() {
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, TickSchedule.tickMillis(0, true));
        assertEquals(TickSchedule.IDLE_TICK_MILLIS, TickSchedule.tickMillis(0, false));
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, TickSchedule.tickMillis(2_000, true), "20 ms: the floor itself");
        assertEquals(TickSchedule.ACTIVE_TICK_MILLIS, TickSchedule.tickMillis(2_099, true), "20.99 ms rounds down");
        assertEquals(21, TickSchedule.tickMillis(2_100, true));
        assertEquals(160, TickSchedule.tickMillis(16_000, true));
        assertEquals(TickSchedule.IDLE_TICK_MILLIS, TickSchedule.tickMillis(16_000, false));
        assertEquals(600, TickSchedule.tickMillis(60_000, false), "many handles lengthen the idle tick too");
    }
}
