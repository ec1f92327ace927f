package lmcache4j.engine.remote.redis;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * At most {@code limit} commands in flight at once; the others wait in order and start as earlier
 * ones complete. The split layout keeps one per connection and server: Redis copies every reply
 * it has queued into its output buffers before the socket drains them, so 32 pipelined 4 MiB GETs
 * on one connection make it build 128 MiB of replies out of cache; measured here on loopback, 4 MiB
 * parts over four connections moved 1.3–1.5 GB/s with every GET pipelined at once and 3.3–3.5 GB/s
 * with two in flight per connection.
 */
final class CommandWindow {
    private final int limit;
    private final Executor starter;
    private final ArrayDeque<Runnable> waiting = new ArrayDeque<>();
    /** Commands given a place and not yet started, and whether a thread is starting them. */
    private final ArrayDeque<Runnable> ready = new ArrayDeque<>();
    private boolean starting;
    private int inflight;

    /**
     * @param starter where a waiting command is started when another completes
     */
    CommandWindow(int limit, Executor starter) {
        if (limit < 1) {
            throw new IllegalArgumentException("a command window needs room for at least 1 command, was " + limit);
        }
        this.limit = limit;
        this.starter = starter;
    }

    /** Runs {@code command} now if there is room, else once there is; completes as the command's future does. */
    <T> CompletableFuture<T> submit(Supplier<CompletableFuture<T>> command) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Runnable start = () -> {
            CompletableFuture<T> f;
            try {
                f = command.get();
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            f.whenComplete((v, e) -> {
                release();
                if (e != null) {
                    result.completeExceptionally(e);
                } else {
                    result.complete(v);
                }
            });
        };
        boolean now;
        synchronized (this) {
            now = inflight < limit;
            if (now) {
                inflight++;
            } else {
                waiting.add(start);
            }
        }
        if (now) {
            start.run();
        }
        return result;
    }

    /** Commands in flight now (for tests). */
    synchronized int inflight() {
        return inflight;
    }

    private void release() {
        synchronized (this) {
            Runnable next = waiting.poll();
            if (next == null) {
                inflight--;
                return;
            }
            ready.add(next); // takes over the finished command's place
            if (starting) {
                return; // the thread already starting commands takes this one too
            }
            starting = true;
        }
        // A loop, not a call per command: commands that fail at once release on this same thread.
        while (true) {
            Runnable next;
            synchronized (this) {
                next = ready.poll();
                if (next == null) {
                    starting = false;
                    return;
                }
            }
            starter.execute(next);
        }
    }
}
