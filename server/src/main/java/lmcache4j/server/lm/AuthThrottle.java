package lmcache4j.server.lm;

import java.time.Duration;

/**
 * Slows token guessing: every wrong token waits {@code delay}, and wrong tokens are answered at
 * most {@code perSecond} times a second across the whole server, whatever the number of
 * connections the guesser opens. Right tokens never wait.
 */
final class AuthThrottle {
    private final long delayNanos;
    private final long spacingNanos;
    private long nextSlotNanos; // guarded by this

    AuthThrottle(Duration delay, double perSecond) {
        this.delayNanos = delay.toNanos();
        this.spacingNanos = (long) (1e9 / perSecond);
        this.nextSlotNanos = System.nanoTime();
    }

    /** Blocks the calling (virtual) thread until this failure may be answered. */
    void awaitFailureSlot() throws InterruptedException {
        long now = System.nanoTime();
        long slot;
        synchronized (this) {
            slot = Math.max(now + delayNanos, nextSlotNanos);
            nextSlotNanos = slot + spacingNanos;
        }
        long wait = slot - now;
        if (wait > 0) {
            Thread.sleep(Duration.ofNanos(wait));
        }
    }
}
