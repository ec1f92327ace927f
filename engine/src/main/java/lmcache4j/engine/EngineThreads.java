package lmcache4j.engine;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The engine's own threads, each made on first use: the layer-copy thread (layerwise copies
 * overlap the caller's compute) and the timer thread (prefetches and lookup pins that no retrieve
 * ended within {@code pin_timeout_sec}). Closing stops both and waits for a timer task in flight,
 * so no scan runs while the tiers close under it.
 */
final class EngineThreads implements AutoCloseable {
    private final Lazy<ExecutorService> layerCopier;
    private final Lazy<ScheduledExecutorService> timer;

    EngineThreads(String modelName) {
        this.layerCopier = new Lazy<>(() -> Executors.newSingleThreadExecutor(r -> daemon(r, "lmcache4j-layer-copy-" + modelName)));
        this.timer = new Lazy<>(() -> {
            ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(1,
                    r -> daemon(r, "lmcache4j-prefetch-expiry-" + modelName));
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
            try {
                t.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        ExecutorService c = layerCopier.ifMade();
        if (c != null) {
            c.shutdown();
        }
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
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
