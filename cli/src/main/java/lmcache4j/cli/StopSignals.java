package lmcache4j.cli;

import java.util.concurrent.CountDownLatch;

import sun.misc.Signal;

/**
 * How a foreground process ({@code server}, {@code controller}) learns it should stop: SIGTERM or
 * SIGINT counts down a latch, the command closes what it started and returns, and the process
 * exits with the command's status (0 after a graceful stop). A JVM shutdown hook would also run the
 * close, but the JVM then exits with 128 + the signal's number (143 for SIGTERM) whatever the
 * command returns. A second signal while the stop is under way ends the process at once, with that
 * 128 + n status.
 */
final class StopSignals {
    private StopSignals() {
    }

    /**
     * A foreground command's stop, armed before it says it is serving (a signal from then on is
     * caught): the signal's latch, or the one a test passes instead of signals.
     */
    record Armed(CountDownLatch signal, CountDownLatch done) {
        /** Waits for the stop, then runs {@code shutdown} (closing and reporting) before the process may exit. */
        void awaitThen(Runnable shutdown) {
            try {
                signal.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                try {
                    shutdown.run();
                } finally {
                    done.countDown();
                }
            }
        }
    }

    /** Installs the signal handling unless {@code testStop} is given (tests count it down themselves). */
    static Armed arm(CountDownLatch testStop, String threadName) {
        CountDownLatch done = new CountDownLatch(1);
        if (testStop != null) {
            return new Armed(testStop, done);
        }
        CountDownLatch signal = new CountDownLatch(1);
        install(signal, done, threadName);
        return new Armed(signal, done);
    }

    /**
     * Counts {@code stop} down on the first SIGTERM or SIGINT. Where the JVM keeps a signal for
     * itself ({@code -Xrs}, or a signal it does not let applications handle), falls back to a
     * shutdown hook that counts down {@code stop} and waits for {@code done}.
     */
    static void install(CountDownLatch stop, CountDownLatch done, String threadName) {
        boolean handled = true;
        for (String name : new String[] {"TERM", "INT"}) {
            try {
                Signal.handle(new Signal(name), signal -> {
                    if (stop.getCount() == 0) {
                        Runtime.getRuntime().halt(128 + signal.getNumber());
                    }
                    stop.countDown();
                });
            } catch (IllegalArgumentException | UnsupportedOperationException e) {
                handled = false;
            }
        }
        if (!handled) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                stop.countDown();
                try {
                    done.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, threadName));
        }
    }
}
