package lmcache4j.engine.storage.disk;

import java.time.Duration;
import java.util.concurrent.PriorityBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.allocator.internal.threads.OwnedThreads;

/**
 * The disk tier's I/O threads: a priority queue where prefetches run before deletes and deletes
 * before puts (LMCache's order), first-in-first-out within a priority. Puts are bounded: when
 * {@code maxQueuedPuts} are waiting, {@link #submit} refuses the next one at once, so a slow disk
 * sheds stores instead of blocking the engine or growing memory without limit.
 */
final class IoExecutor implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(IoExecutor.class.getName());

    /** Job priorities, most urgent first. */
    enum Priority { PREFETCH, DELETE, PUT }

    private record Job(Priority priority, long sequence, Runnable work) implements Comparable<Job> {
        @Override
        public int compareTo(Job o) {
            int c = priority.compareTo(o.priority);
            return c != 0 ? c : Long.compare(sequence, o.sequence);
        }
    }

    private static final Job STOP = new Job(Priority.PUT, Long.MAX_VALUE, () -> { });

    private final PriorityBlockingQueue<Job> queue = new PriorityBlockingQueue<>();
    private final AtomicLong sequence = new AtomicLong();
    private final AtomicInteger queuedPuts = new AtomicInteger();
    private final int maxQueuedPuts;
    private final int threadCount;
    private final OwnedThreads threads = new OwnedThreads();
    private volatile boolean closed;

    /** Threads named {@code lmcache4j-name-io-N}. */
    IoExecutor(String name, int threadCount, int maxQueuedPuts) {
        if (threadCount < 1 || maxQueuedPuts < 1) {
            throw new IllegalArgumentException("need at least one I/O thread and one queued put, got "
                    + threadCount + " and " + maxQueuedPuts);
        }
        this.maxQueuedPuts = maxQueuedPuts;
        this.threadCount = threadCount;
        for (int i = 0; i < threadCount; i++) {
            threads.start(name + "-io-" + i, this::run);
        }
    }

    /** Queues {@code work}; false (and nothing queued) when closed or when the put queue is full. */
    boolean submit(Priority priority, Runnable work) {
        if (closed) {
            return false;
        }
        if (priority == Priority.PUT && queuedPuts.incrementAndGet() > maxQueuedPuts) {
            queuedPuts.decrementAndGet();
            return false;
        }
        queue.add(new Job(priority, sequence.incrementAndGet(), work));
        return true;
    }

    /** Puts waiting to run. */
    int queuedPuts() {
        return queuedPuts.get();
    }

    private void run() {
        while (true) {
            Job job;
            try {
                job = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            if (job == STOP) {
                return;
            }
            if (job.priority() == Priority.PUT) {
                queuedPuts.decrementAndGet();
            }
            try {
                job.work().run();
            } catch (RuntimeException | Error e) {
                LOG.log(System.Logger.Level.ERROR, "disk I/O job failed: " + e, e);
            }
        }
    }

    /**
     * Refuses new work, runs what is queued, and stops the threads (waiting up to
     * {@code timeoutMillis}); returns false if they did not stop in time.
     */
    boolean close(long timeoutMillis) {
        closed = true;
        for (int i = 0; i < threadCount; i++) {
            queue.add(STOP); // STOP sorts after every real job
        }
        return threads.join(Duration.ofMillis(timeoutMillis));
    }

    @Override
    public void close() {
        close(30_000);
    }
}
