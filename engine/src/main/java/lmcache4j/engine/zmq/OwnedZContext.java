package lmcache4j.engine.zmq;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import org.zeromq.ZContext;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import zmq.poll.Poller;

/**
 * A ZeroMQ context whose I/O and reaper threads are lmcache4j's: named
 * {@code lmcache4j-<component>-zmq-…} and joined when the context is closed, so a component that
 * closes its context leaves none of JeroMQ's threads behind either. Its pollers carry
 * {@link PollerRepair}, without which JeroMQ 0.6.0 now and then leaves a connection it just made
 * unwatched until its handshake timer fires: every context lmcache4j makes is one of these
 * ({@code ZmqContextRuleTest}).
 */
public final class OwnedZContext extends ZContext {
    /** JeroMQ stops its threads as the context terminates: they end at once, or something is wrong. */
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);

    private final OwnedThreads threads = new OwnedThreads();
    /** What runs on every tick of each I/O thread, by owner: each {@link ConnectionGuard}'s sweep. */
    private final Map<Object, Consumer<Poller>> onTick = new ConcurrentHashMap<>();

    /** A context for {@code component} with {@code ioThreads} I/O threads (started with its first socket). */
    public OwnedZContext(String component, int ioThreads) {
        super(ioThreads);
        setThreadFactor((body, name) -> threads.platform(component + "-zmq-" + name, PollerRepair.around(body, name, this::tick)));
    }

    /**
     * Runs {@code task} on every tick of each I/O thread ({@link PollerRepair}), on that thread with
     * its poller, once per {@code owner} however often it is added; for as long as the context lives.
     */
    void onTick(Object owner, Consumer<Poller> task) {
        onTick.putIfAbsent(owner, task);
    }

    private void tick(Poller poller) {
        for (Consumer<Poller> task : onTick.values()) {
            task.accept(poller);
        }
    }

    /** Closes every socket made here, terminates the context and joins its threads. */
    @Override
    public void destroy() {
        super.destroy();
        threads.join(JOIN_BOUND);
    }
}
