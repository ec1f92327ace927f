package lmcache4j.allocator.internal;

import java.lang.ref.Cleaner;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

import lmcache4j.allocator.internal.threads.OwnedThreads;

/**
 * Finds objects that become unreachable while still holding a reference or pin, in the spirit of
 * Netty's leak detector. Controlled by {@code -Dlmcache4j.leakDetection}:
 * <ul>
 *   <li>{@code disabled}: nothing is tracked;</li>
 *   <li>{@code sampled} (default): each allocation is tracked with probability 1/{@value #SAMPLING_INTERVAL};</li>
 *   <li>{@code paranoid}: every allocation is tracked and its allocation site recorded, so that
 *       leak reports and allocator close failures say where the object came from.</li>
 * </ul>
 * A detected leak is logged and its memory reclaimed by the owner, so a leak costs a warning, not
 * capacity.
 */
public final class LeakDetection {
    /** The {@code sampled} mode tracks one allocation in this many. */
    public static final int SAMPLING_INTERVAL = 128;
    public static final String PROPERTY = "lmcache4j.leakDetection";

    /** The detection level. */
    public enum Level { DISABLED, SAMPLED, PARANOID }

    private static final Cleaner CLEANER = Cleaner.create(r -> OwnedThreads.shared("leak-detector", r));
    private static final Level LEVEL = parse(System.getProperty(PROPERTY, "sampled"));

    private LeakDetection() {
    }

    static Level parse(String value) {
        try {
            return Level.valueOf(value.strip().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("-D" + PROPERTY + "=" + value + " is not one of disabled, sampled, paranoid", e);
        }
    }

    /** The level in force. */
    public static Level level() {
        return LEVEL;
    }

    /** The allocation site to record, in paranoid mode; else null. */
    public static Throwable siteIfRecording() {
        return LEVEL == Level.PARANOID ? new Throwable("allocated here") : null;
    }

    /**
     * Whether to track the next allocation: always in paranoid mode, one in
     * {@value #SAMPLING_INTERVAL} when sampled. Ask first, so that untracked allocations build no
     * reclaimer and no description.
     */
    public static boolean shouldTrack() {
        // A thread-local random draw rather than a shared counter: no contention between allocating threads.
        return LEVEL == Level.PARANOID
                || LEVEL == Level.SAMPLED && ThreadLocalRandom.current().nextInt(SAMPLING_INTERVAL) == 0;
    }

    /**
     * Runs {@code onUnreachable} when {@code obj} becomes unreachable, unless {@link #released} was
     * called with the returned tracker first. The action must not reference {@code obj}.
     */
    public static Tracker register(Object obj, Runnable onUnreachable) {
        Tracker t = new Tracker(onUnreachable);
        t.cleanable = CLEANER.register(obj, t);
        return t;
    }

    /**
     * The tracked object was released properly: drop its registration now, on this thread, so the
     * collector has no reference to process and the cleaner thread never takes the allocator's lock
     * for it (with every sampled object left registered that cost the allocation path stray lock
     * contention and longer pauses). {@code tracker} may be null.
     */
    public static void released(Tracker tracker) {
        if (tracker != null) {
            tracker.released = true;
            tracker.cleanable.clean(); // runs the action, which now does nothing, and deregisters
        }
    }

    /** One tracked object's registration. */
    public static final class Tracker implements Runnable {
        private final Runnable onUnreachable;
        private volatile boolean released;
        private Cleaner.Cleanable cleanable;

        private Tracker(Runnable onUnreachable) {
            this.onUnreachable = onUnreachable;
        }

        @Override
        public void run() {
            if (!released) {
                onUnreachable.run();
            }
        }
    }
}
