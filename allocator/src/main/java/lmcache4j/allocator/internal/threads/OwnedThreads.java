package lmcache4j.allocator.internal.threads;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * The threads one component starts, made in one place so that each is named {@code lmcache4j-…}
 * (a thread dump says whose it is), is a daemon (a component nobody closed never keeps the JVM
 * alive) and is recorded, so that the component's close can wait for every one of them, those its
 * executors made included. The component stops its threads its own way (a flag, a closed socket,
 * an executor's shutdown: a ZeroMQ thread must not be interrupted) and then {@link #join}s them.
 *
 * <p>Thread-safe. Threads that ended are forgotten as new ones are made, so a component that starts
 * a thread per connection holds on to the live ones only.
 */
public final class OwnedThreads {
    /** Every thread lmcache4j starts has a name that begins with this. */
    public static final String PREFIX = "lmcache4j-";

    private static final System.Logger LOG = System.getLogger(OwnedThreads.class.getName());
    private static final int PRUNE_AT_LEAST = 64;
    /** Threads made here, by any owner, whose body is running: virtual ones too, which no JDK listing shows. */
    private static final Set<Thread> RUNNING = ConcurrentHashMap.newKeySet();

    private final List<Thread> threads = new ArrayList<>(); // guarded by this
    private int pruneAt = PRUNE_AT_LEAST; // guarded by this

    /** An unstarted platform daemon thread named {@code lmcache4j-name}. */
    public Thread platform(String name, Runnable body) {
        return record(Thread.ofPlatform().daemon().name(PREFIX + name).unstarted(tracked(body)));
    }

    /** A started platform daemon thread named {@code lmcache4j-name}. */
    public Thread start(String name, Runnable body) {
        Thread t = platform(name, body);
        t.start();
        return t;
    }

    /** Platform daemon threads named {@code lmcache4j-name-0}, {@code -1}, …, for an executor. */
    public ThreadFactory platformFactory(String name) {
        ThreadFactory f = Thread.ofPlatform().daemon().name(PREFIX + name + "-", 0).factory();
        return body -> record(f.newThread(tracked(body)));
    }

    /** Virtual threads named {@code lmcache4j-name-0}, {@code -1}, …, for an executor or one thread per task. */
    public ThreadFactory virtualFactory(String name) {
        ThreadFactory f = Thread.ofVirtual().name(PREFIX + name + "-", 0).factory();
        return body -> record(f.newThread(tracked(body)));
    }

    /**
     * The threads of another library's {@code factory} (which names them {@code lmcache4j-…} and
     * makes them daemons, as the caller configured it), recorded here like the rest.
     */
    public ThreadFactory recording(ThreadFactory factory) {
        return body -> record(factory.newThread(tracked(body)));
    }

    /**
     * An unstarted platform daemon thread named {@code lmcache4j-name} that no component owns: one of
     * the few shared by the whole process, which live as long as it (and are never joined).
     */
    public static Thread shared(String name, Runnable body) {
        return Thread.ofPlatform().daemon().name(PREFIX + name).unstarted(tracked(body));
    }

    /**
     * Waits until every thread made here that was started has ended, or {@code bound} has passed;
     * true when they all ended. Those still running are named in a warning. The calling thread is
     * not waited for (a component closed from one of its own threads cannot wait for itself), nor
     * is a thread never started (an executor that was shut down drops the one it just made).
     */
    public boolean join(Duration bound) {
        long deadline = System.nanoTime() + bound.toNanos();
        List<Thread> left = started();
        try {
            // Again until none is left: an executor draining its queue may start a thread while we wait.
            while (!left.isEmpty()) {
                long nanos = deadline - System.nanoTime();
                if (nanos <= 0) {
                    break;
                }
                left.getFirst().join(Duration.ofNanos(nanos));
                left = started();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!left.isEmpty()) {
            LOG.log(Level.WARNING, "threads still running " + TimeUnit.NANOSECONDS.toMillis(bound.toNanos())
                    + " ms after their owner stopped them: " + left.stream().map(Thread::getName).toList());
        }
        return left.isEmpty();
    }

    /** Threads made here and still running (a snapshot). */
    public List<Thread> live() {
        return started();
    }

    /** Threads made through any {@code OwnedThreads} whose body is still running, virtual ones included (a snapshot). */
    public static Set<Thread> running() {
        return Set.copyOf(RUNNING);
    }

    /** Threads held in the record (tests: ended ones are pruned). */
    synchronized int recorded() {
        return threads.size();
    }

    private synchronized List<Thread> started() {
        List<Thread> out = new ArrayList<>();
        for (Thread t : threads) {
            Thread.State s = t.getState();
            if (s != Thread.State.NEW && s != Thread.State.TERMINATED && t != Thread.currentThread()) {
                out.add(t);
            }
        }
        return out;
    }

    private synchronized Thread record(Thread t) {
        if (threads.size() >= pruneAt) {
            threads.removeIf(x -> x.getState() == Thread.State.TERMINATED);
            pruneAt = Math.max(PRUNE_AT_LEAST, 2 * threads.size());
        }
        threads.add(t);
        return t;
    }

    private static Runnable tracked(Runnable body) {
        return () -> {
            Thread me = Thread.currentThread();
            RUNNING.add(me);
            try {
                body.run();
            } finally {
                RUNNING.remove(me);
            }
        };
    }
}
