package lmcache4j.engine;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.function.Supplier;

import lmcache4j.allocator.internal.threads.OwnedThreads;

/**
 * The engine's own threads, each made on first use: the layer-copy thread (layerwise copies
 * overlap the caller's compute) and the timer thread (prefetches and lookup pins that no retrieve
 * ended within {@code pin_timeout_sec}). Closing stops both and waits for them, a timer task or a
 * layer copy in flight included, so nothing runs while the tiers close under it.
 */
final class EngineThreads implements AutoCloseable {
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);

    private final OwnedThreads threads = new OwnedThreads();
    private final Lazy<ExecutorService> layerCopier;
    private final Lazy<ScheduledExecutorService> timer;

    EngineThreads(String modelName) {
        this.layerCopier = new Lazy<>(() -> Executors.newSingleThreadExecutor(
                r -> threads.platform("layer-copy-" + modelName, r)));
        this.timer = new Lazy<>(() -> {
            ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(1,
                    r -> threads.platform("prefetch-expiry-" + modelName, r));
            pool.setRemoveOnCancelPolicy(true);
            return pool;
        });
    }

    /** The thread layerwise copies run on. */
    ExecutorService layerCopier() {
        return layerCopier.get();
    }

    /** The timer thread. */
    ScheduledExecutorService timer() {
        return timer.get();
    }

    @Override
    public void close() {
        ScheduledExecutorService t = timer.ifMade();
        if (t != null) {
            t.shutdownNow();
        }
        ExecutorService c = layerCopier.ifMade();
        if (c != null) {
            c.shutdown(); // a copy already queued still runs: its caller waits for it
        }
        threads.join(JOIN_BOUND);
    }

    /** A value made once, on first use, by whichever thread asks first. */
    private static final class Lazy<T> {
        private final Supplier<T> make;
        private volatile T value;

        Lazy(Supplier<T> make) {
            this.make = make;
        }

        T get() {
            T v = value;
            if (v == null) {
                synchronized (this) {
                    v = value;
                    if (v == null) {
                        v = make.get();
                        value = v;
                    }
                }
            }
            return v;
        }

        /** The value if it was made, else null. */
        T ifMade() {
            return value;
        }
    }
}
