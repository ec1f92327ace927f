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
