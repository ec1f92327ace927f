package lmcache4j.engine.pd.wire;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import lmcache4j.allocator.internal.threads.OwnedThreads;

/**
 * One direction's deadline for the frame in progress on a connection (a write, or a chunk read
 * straight into memory, where the socket's read timeout does not apply): when it passes, the
 * connection is closed, so the blocked thread fails at once.
 *
 * <p>Arming and disarming write one field: one watchdog thread for the process looks at every
 * armed deadline every {@link #PERIOD_MILLIS} ms. A timer task per frame, as before, woke that
 * thread at every chunk and every acknowledgement (a schedule at the head of its queue signals it),
 * three thread switches a chunk on the transfer's hottest path. A deadline fires up to one period
 * late, which the allowances (seconds) absorb.
 */
final class FrameDeadline {
    /** How often the watchdog looks. */
    static final long PERIOD_MILLIS = 50;
    private static final System.Logger LOG = System.getLogger(FrameDeadline.class.getName());
    private static final long IDLE = 0;
    /** Every armed deadline, and some just disarmed (the watchdog drops those as it looks). */
    private static final Set<FrameDeadline> ARMED = ConcurrentHashMap.newKeySet();
    private static volatile Thread watchdog;
    private static volatile boolean watchdogIdle; // parked until a deadline is armed: only then does arming wake it

    private final AtomicLong deadline = new AtomicLong(IDLE);
    private final Runnable onExpiry;
    private volatile boolean expired;

    /** A deadline that runs {@code onExpiry} (closing the connection) once, when an armed deadline passes. */
    FrameDeadline(Runnable onExpiry) {
        this.onExpiry = onExpiry;
    }

    /** Arms the deadline {@code allowanceNanos} from now (the frame has begun). */
    void arm(long allowanceNanos) {
        long at = System.nanoTime() + allowanceNanos;
        deadline.set(at == IDLE ? 1 : at);
        if (ARMED.add(this) && (watchdog == null || watchdogIdle)) {
            wake();
        }
    }

    /** Disarms it (the frame is done). */
    void disarm() {
        deadline.set(IDLE);
    }

    /** Whether it passed while armed (and so closed the connection). */
    boolean expired() {
        return expired;
    }

    private static void wake() {
        Thread w = watchdog;
        if (w == null) {
            synchronized (FrameDeadline.class) {
                if (watchdog == null) {
                    // One thread for the whole process (it parks while nothing is registered), never joined.
                    Thread t = OwnedThreads.shared("pd-frame-watchdog", FrameDeadline::watch);
                    watchdog = t;
                    t.start();
                }
                w = watchdog;
            }
        }
        LockSupport.unpark(w);
    }

    private static void watch() {
        while (true) {
            watchdogIdle = true;
            if (ARMED.isEmpty()) { // an arm after this test finds watchdogIdle set, and its unpark ends this park
                LockSupport.park(FrameDeadline.class);
            }
            watchdogIdle = false;
            if (ARMED.isEmpty()) {
                continue;
            }
            LockSupport.parkNanos(FrameDeadline.class, TimeUnit.MILLISECONDS.toNanos(PERIOD_MILLIS));
            long now = System.nanoTime();
            for (FrameDeadline d : ARMED) {
                d.check(now);
            }
        }
    }

    private void check(long now) {
        long at = deadline.get();
        if (at == IDLE) {
            ARMED.remove(this);
            if (deadline.get() != IDLE) { // armed between the two reads: its add may have found it still here
                ARMED.add(this);
            }
        } else if (now - at > 0 && deadline.compareAndSet(at, IDLE)) {
            expired = true;
            ARMED.remove(this);
            try {
                onExpiry.run();
            } catch (RuntimeException e) { // the one watchdog must outlive any connection's close
                LOG.log(System.Logger.Level.ERROR, "closing a PD connection past its frame deadline failed: " + e, e);
            }
        }
    }
}
