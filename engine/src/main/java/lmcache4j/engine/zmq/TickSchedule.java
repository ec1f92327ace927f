package lmcache4j.engine.zmq;

import java.util.function.LongSupplier;

/**
 * How long {@link PollerRepair} waits before its next tick on one poller: short for a while after
 * the number of the poller's handles changed (a connect started or completed, when JeroMQ loses a
 * registration), long otherwise, and longer with many handles. Used by the poller's one thread; the
 * clock is {@link System#nanoTime} but in tests.
 */
final class TickSchedule {
    static final long ACTIVE_TICK_MILLIS = 20;
    static final long IDLE_TICK_MILLIS = 500;
    /** How long the ticks stay short after the number of handles changed. */
    static final long ACTIVE_MILLIS = 1_000;
    /** A compiled pass costs under 100 ns per handle: a tick of 10 µs per handle keeps the passes near 1% of the thread. */
    private static final long MICROS_PER_HANDLE = 10;

    private final LongSupplier nanoClock;
    private int lastHandles = -1;
    private long activeUntilNanos;

    TickSchedule(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
    }

    /** The milliseconds to the next tick of a poller watching {@code handles} handles now. */
    long nextTickMillis(int handles) {
        long now = nanoClock.getAsLong();
        if (handles != lastHandles) {
            lastHandles = handles;
            activeUntilNanos = now + ACTIVE_MILLIS * 1_000_000;
        }
        return tickMillis(handles, now - activeUntilNanos < 0); // a difference, not a comparison: nanoTime may wrap
    }

    /** The tick for a poller watching {@code handles} handles, whose number changed recently or not. */
    static long tickMillis(int handles, boolean active) {
        return Math.max(active ? ACTIVE_TICK_MILLIS : IDLE_TICK_MILLIS, handles * MICROS_PER_HANDLE / 1_000);
    }
}
