package lmcache4j.server.controller.registry;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import lmcache4j.server.controller.index.ChunkIndex;

/**
 * Registered workers and their liveness. A worker is known from its RegisterMsg (or, after a
 * controller restart, from its first HeartbeatMsg) until it deregisters or misses heartbeats for
 * longer than the timeout; leaving removes every index entry it had, in every location.
 *
 * <p>Changes come from the controller's one ingestion thread; reads ({@link #workers()}, for the
 * HTTP API and the forwarding of control messages) may come from any thread: entries are
 * immutable records in a concurrent map.
 */
public final class WorkerRegistry {
    private static final System.Logger LOG = System.getLogger(WorkerRegistry.class.getName());

    private final Map<WorkerKey, WorkerInfo> workers = new ConcurrentHashMap<>();
    private final ChunkIndex index;
    private final FullSyncTracker sync;
    private final InstantSource clock;
    private final Duration timeout;
    private final int maxWorkers;
    private volatile Consumer<WorkerInfo> departed = w -> { };

    /** What a registration or heartbeat did. */
    public enum Outcome {
        /** A worker not known before was registered. */
        NEW,
        /** A known worker registered again, or beat. */
        KNOWN,
        /** Refused: the registry holds its maximum of workers. */
        FULL,
        /**
         * Refused: the worker is registered, alive, at another address (ip, port or P2P URL); the
         * first registrant keeps its identity until it deregisters or times out.
         */
        TAKEN
    }

    /** A registry without a cap on workers. */
    public WorkerRegistry(ChunkIndex index, FullSyncTracker sync, InstantSource clock, Duration timeout) {
        this(index, sync, clock, timeout, Integer.MAX_VALUE);
    }

    /**
     * @param timeout    how long a worker may go without a heartbeat (LMCache's
     *                   {@code lmcache_worker_timeout}) before it is dropped with its entries
     * @param maxWorkers workers held at most: a new one beyond it is refused until one leaves
     */
    public WorkerRegistry(ChunkIndex index, FullSyncTracker sync, InstantSource clock, Duration timeout, int maxWorkers) {
        this.index = Objects.requireNonNull(index, "index");
        this.sync = Objects.requireNonNull(sync, "sync");
        this.clock = Objects.requireNonNull(clock, "clock");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("worker timeout must be positive, was " + timeout);
        }
        this.timeout = timeout;
        if (maxWorkers < 1) {
            throw new IllegalArgumentException("max workers must be at least 1, was " + maxWorkers);
        }
        this.maxWorkers = maxWorkers;
    }

    /**
     * Registers a worker (RegisterMsg). A worker that was already registered restarted: what the
     * index held for it is gone from its memory, so its entries are dropped (a persistent tier
     * reports its chunks again, or full-syncs).
     *
     * @return {@link Outcome#NEW}, {@link Outcome#KNOWN} (registered again) or {@link Outcome#FULL}
     */
    public Outcome register(WorkerKey key, String ip, int port, Optional<String> peerInitUrl) {
        Instant now = clock.instant();
        WorkerInfo current = workers.get(key);
        if (current == null && workers.size() >= maxWorkers) {
            return Outcome.FULL;
        }
        if (current != null && !(current.at(ip, port) && current.peerInitUrl().equals(peerInitUrl))) {
            LOG.log(System.Logger.Level.WARNING, "refused a registration of {0} from {1}:{2}: it is registered at {3}",
                    key, ip, Integer.toString(port), current.replyAddress()); // a port as text: MessageFormat writes 58002 as 58,002
            return Outcome.TAKEN;
        }
        WorkerInfo old = workers.put(key, new WorkerInfo(key, ip, port, peerInitUrl, now, now));
        if (old != null) {
            long dropped = index.removeWorker(key.instanceId(), key.workerId());
            sync.forget(key);
            LOG.log(System.Logger.Level.INFO, "worker {0} registered again at {1}:{2}; dropped its {3} entries",
                    key, ip, Integer.toString(port), dropped);
        } else {
            LOG.log(System.Logger.Level.INFO, "worker {0} registered at {1}:{2}", key, ip, Integer.toString(port));
        }
        return old == null ? Outcome.NEW : Outcome.KNOWN;
    }

    /**
     * Records a heartbeat (HeartbeatMsg). An unknown worker (the controller restarted, or dropped it
     * after a timeout) is registered from the heartbeat's fields.
     *
     * @return {@link Outcome#KNOWN}; {@link Outcome#NEW} when the worker was unknown and has just
     *         been registered (it must full-sync); {@link Outcome#FULL} when it was unknown and refused;
     *         {@link Outcome#TAKEN} when it is registered at another address (the beat is not counted)
     */
    public Outcome heartbeat(WorkerKey key, String ip, int port, Optional<String> peerInitUrl) {
        Instant now = clock.instant();
        WorkerInfo known = workers.get(key);
        if (known != null) {
            if (!known.at(ip, port)) {
                return Outcome.TAKEN;
            }
            workers.put(key, known.beatAt(now));
            return Outcome.KNOWN;
        }
        if (workers.size() >= maxWorkers) {
            return Outcome.FULL;
        }
        workers.put(key, new WorkerInfo(key, ip, port, peerInitUrl, now, now));
        LOG.log(System.Logger.Level.INFO, "heartbeat from unknown worker {0} at {1}:{2}: registered it and asked for a full sync",
                key, ip, Integer.toString(port));
        return Outcome.NEW;
    }

    /** Deregisters a worker (DeRegisterMsg) and drops its entries; returns how many it had. */
    public long deregister(WorkerKey key) {
        WorkerInfo known = workers.get(key);
        return known == null ? 0 : deregister(key, known.ip(), known.port());
    }

    /**
     * Deregisters a worker whose DeRegisterMsg names the address it registered from, and drops its
     * entries; returns how many it had, or -1 when the worker is registered at another address
     * (refused: a stranger cannot remove it).
     */
    public long deregister(WorkerKey key, String ip, int port) {
        WorkerInfo known = workers.get(key);
        if (known == null) {
            return 0;
        }
        if (!known.at(ip, port)) {
            LOG.log(System.Logger.Level.WARNING, "refused a deregistration of {0} from {1}:{2}: it is registered at {3}",
                    key, ip, Integer.toString(port), known.replyAddress());
            return -1;
        }
        WorkerInfo gone = workers.remove(key);
        if (gone == null) {
            return 0;
        }
        departed.accept(gone);
        sync.forget(key);
        long dropped = index.removeWorker(key.instanceId(), key.workerId());
        LOG.log(System.Logger.Level.INFO, "worker {0} deregistered; dropped its {1} entries", key, dropped);
        return dropped;
    }

    /** Called with each worker that deregisters or times out (the controller closes its socket to it). */
    public void onDeparture(Consumer<WorkerInfo> listener) {
        departed = Objects.requireNonNull(listener);
    }

    /** Whether {@code key} is registered: only registered workers' admits and evicts are indexed. */
    public boolean isRegistered(WorkerKey key) {
        return workers.containsKey(key);
    }

    /**
     * Drops every worker whose last heartbeat is older than the timeout, with its entries.
     *
     * @return the workers dropped
     */
    public List<WorkerKey> dropExpired() {
        Instant deadline = clock.instant().minus(timeout);
        List<WorkerKey> dropped = new ArrayList<>();
        for (WorkerInfo w : workers.values()) {
            if (w.lastHeartbeat().isBefore(deadline) && workers.remove(w.key(), w)) {
                departed.accept(w);
                sync.forget(w.key());
                long entries = index.removeWorker(w.key().instanceId(), w.key().workerId());
                LOG.log(System.Logger.Level.WARNING, "worker {0} missed heartbeats for more than {1} s; dropped it and its {2} entries",
                        w.key(), timeout.toMillis() / 1000.0, entries);
                dropped.add(w.key());
            }
        }
        return dropped;
    }

    /** The registered workers, sorted by instance and worker id. */
    public List<WorkerInfo> workers() {
        List<WorkerInfo> all = new ArrayList<>(workers.values());
        all.sort(Comparator.comparing((WorkerInfo w) -> w.key().instanceId()).thenComparingInt(w -> w.key().workerId()));
        return all;
    }

    /** The registered workers of one instance, sorted by worker id. */
    public List<WorkerInfo> workersOf(String instanceId) {
        return workers().stream().filter(w -> w.key().instanceId().equals(instanceId)).toList();
    }

    /** The most workers held at once. */
    public int maxWorkers() {
        return maxWorkers;
    }

    /** The liveness timeout. */
    public Duration timeout() {
        return timeout;
    }
}
