package lmcache4j.engine.remote;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.LayerCacheEngineKey;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.remote.serde.NaiveSerde;
import lmcache4j.engine.remote.serde.RemoteSerde;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.Prefetching;
import lmcache4j.engine.storage.ResidencyListener;
import lmcache4j.engine.storage.StorageBackend;

/**
 * The remote tier (LMCache's {@code RemoteBackend}, spec §4.1–4.2) over one {@link RemoteConnector}.
 * Puts are asynchronous and deduplicated by in-flight key; gets wait at most
 * {@code blocking_timeout_secs} (a timeout is a miss, and an object that arrives later is
 * released); every connector failure is a miss or a dropped, counted put: the engine's callers
 * never see a remote exception.
 *
 * <p>Health: every {@code ping_interval} seconds the connector is pinged with a
 * {@code ping_timeout}; an unhealthy remote is swapped for a {@link BlackholeConnector} (puts
 * dropped and counted, gets miss) and swapped back when it answers again.
 *
 * <p>Besides counters, the tier keeps the store's {@link RemoteHealth}: every operation it runs
 * against the store (not against the stand-in blackhole) and every ping tells whether the store
 * answered, so a report can say "unreachable for 12 s (connection refused)" rather than count
 * lost puts.
 */
public final class RemoteBackend implements StorageBackend {
    /** LMCache's backend name. */
    public static final String NAME = "RemoteBackend";
    private volatile ResidencyListener residency = ResidencyListener.NONE;
    private static final System.Logger LOG = System.getLogger(RemoteBackend.class.getName());

    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);

    private final RemoteConnector remote;
    private final BlackholeConnector blackhole;
    private final AtomicReference<RemoteConnector> active;
    private final MemoryProvider memory;
    private final long timeoutNanos;
    private final Set<CacheKey> putsInFlight = ConcurrentHashMap.newKeySet();
    private final OwnedThreads threads = new OwnedThreads();
    /** Where prefetched objects are decoded: off the connector's I/O threads, one virtual thread each. */
    private final ExecutorService decoders = Executors.newThreadPerTaskExecutor(threads.virtualFactory("remote-prefetch"));
    /** {@link #decoders}, or the completing thread once the tier closed: an object that arrives is always released. */
    private final Executor decoding = task -> {
        try {
            decoders.execute(task);
        } catch (RejectedExecutionException closed) {
            task.run();
        }
    };
    private final Thread monitor;
    private volatile boolean closed;
    private final boolean readAsWorkerZero;
    private final RemoteSerde serde;

    private final LongAdder puts = new LongAdder();
    private final LongAdder putBytes = new LongAdder();
    private final LongAdder droppedPuts = new LongAdder();
    private final LongAdder failedPuts = new LongAdder();
    private final LongAdder gets = new LongAdder();
    private final LongAdder getBytes = new LongAdder();
    private final LongAdder timeouts = new LongAdder();
    private final LongAdder failures = new LongAdder();
    private final LongAdder pingFailures = new LongAdder();
    private final RemoteHealthTracker health = new RemoteHealthTracker(InstantSource.system());

    /**
     * @param memory              where gets allocate the objects they return
     * @param blockingTimeoutSecs {@code blocking_timeout_secs}: the longest a get or exists waits
     * @param pingIntervalSecs    {@code extra_config.ping_interval}
     * @param pingTimeoutSecs     {@code extra_config.ping_timeout}
     */
    public RemoteBackend(RemoteConnector remote, MemoryProvider memory, double blockingTimeoutSecs, double pingIntervalSecs,
                         double pingTimeoutSecs) {
        this(remote, memory, blockingTimeoutSecs, pingIntervalSecs, pingTimeoutSecs, false);
    }

    /**
     * As above; with {@code readAsWorkerZero} (LMCache's MLA rule for a worker other than 0 when
     * {@code extra_config.remote_enable_mla_worker_id_as0}): every worker reads the one copy worker
     * 0 wrote, under worker 0's keys, and writes nothing.
     */
    public RemoteBackend(RemoteConnector remote, MemoryProvider memory, double blockingTimeoutSecs, double pingIntervalSecs,
                         double pingTimeoutSecs, boolean readAsWorkerZero) {
        this(remote, memory, blockingTimeoutSecs, pingIntervalSecs, pingTimeoutSecs, readAsWorkerZero, NaiveSerde.INSTANCE);
    }

    /**
     * As above, storing objects through the serde {@code remoteSerde} names ({@code remote_serde}:
     * naive, lz4, zstd); with a compressing serde, naive entries already in the store are still read.
     *
     * @throws IllegalArgumentException for a serde name lmcache4j does not know, naming the ones it does
     */
    public RemoteBackend(RemoteConnector remote, MemoryProvider memory, double blockingTimeoutSecs, double pingIntervalSecs,
                         double pingTimeoutSecs, boolean readAsWorkerZero, String remoteSerde) {
        this(remote, memory, blockingTimeoutSecs, pingIntervalSecs, pingTimeoutSecs, readAsWorkerZero,
                RemoteSerde.forName(remoteSerde));
    }

    /** As above, through {@code serde} itself (this package's tests give it one that fails). */
    RemoteBackend(RemoteConnector remote, MemoryProvider memory, double blockingTimeoutSecs, double pingIntervalSecs,
                  double pingTimeoutSecs, boolean readAsWorkerZero, RemoteSerde serde) {
        this.serde = Objects.requireNonNull(serde, "serde");
        this.readAsWorkerZero = readAsWorkerZero;
        this.remote = Objects.requireNonNull(remote, "remote");
        this.memory = Objects.requireNonNull(memory, "memory");
        this.blackhole = new BlackholeConnector("blackhole:// (standing in for " + remote.url() + ")");
        this.active = new AtomicReference<>(remote);
        this.timeoutNanos = (long) (blockingTimeoutSecs * 1e9);
        long interval = (long) (pingIntervalSecs * 1e9);
        long pingTimeout = (long) (pingTimeoutSecs * 1e9);
        this.monitor = threads.start("remote-health", () -> monitor(interval, pingTimeout));
    }

    @Override
    public String name() {
        return NAME;
    }

    /** The store's URL as its connector shows it: credentials and options removed. */
    public String url() {
        return remote.url();
    }

    /** Whether the remote answered its last ping (else the blackhole stands in). */
    public boolean healthy() {
        return active.get() == remote;
    }

    private void monitor(long intervalNanos, long pingTimeoutNanos) {
        while (!closed) {
            try {
                TimeUnit.NANOSECONDS.sleep(intervalNanos);
            } catch (InterruptedException e) {
                return;
            }
            boolean ok;
            try {
                remote.ping().get(pingTimeoutNanos, TimeUnit.NANOSECONDS);
                ok = true;
                health.pinged(true, null);
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                ok = false;
                pingFailures.increment();
                health.pinged(false, e instanceof TimeoutException ? timedOut("a ping", pingTimeoutNanos) : e);
            }
            RemoteConnector next = ok ? remote : blackhole;
            RemoteConnector previous = active.getAndSet(next);
            if (previous != next) {
                LOG.log(ok ? Level.INFO : Level.WARNING, ok ? remote.url() + " answers again: remote tier back"
                        : remote.url() + " did not answer a ping: puts are dropped and gets miss until it does");
            }
        }
    }

    /** The key the remote store holds {@code key} under: worker 0's, in the MLA worker-0 mode. */
    private CacheKey remoteKey(CacheKey key) {
        if (!readAsWorkerZero) {
            return key;
        }
        return switch (key) {
            case CacheEngineKey chunk -> chunk.withWorkerId(0);
            case LayerCacheEngineKey layer -> layer.chunk().withWorkerId(0).layer(layer.layerId());
        };
    }

    // ---- lookups ----------------------------------------------------------------------------

    @Override
    public boolean contains(CacheKey key, boolean pin) {
        RemoteConnector target = active.get();
        return await(target, target.exists(remoteKey(key))).orElse(false);
    }

    @Override
    public boolean isLocal() {
        return false;
    }

    /** Pins mean nothing to a remote store (LMCache's no-op). */
    @Override
    public boolean unpin(CacheKey key) {
        return true;
    }

    @Override
    public void touchCache() {
    }

    // ---- put --------------------------------------------------------------------------------

    @Override
    public void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
        if (keys.size() != objs.size()) {
            throw new IllegalArgumentException(keys.size() + " keys but " + objs.size() + " objects");
        }
        RemoteConnector target = active.get();
        if (readAsWorkerZero) {
            return; // worker 0 writes the one copy
        }
        for (int i = 0; i < keys.size(); i++) {
            CacheKey key = keys.get(i);
            MemoryObj obj = objs.get(i);
            if (closed || target == blackhole) {
                droppedPuts.increment();
                continue;
            }
            if (!putsInFlight.add(key)) {
                continue;
            }
            RemoteSerde.Serialized serialized;
            try {
                serialized = serde.serialize(obj); // holds what backs the payload until closed
            } catch (RuntimeException e) { // a dtype or shape LMCache's header cannot carry
                failedPuts.increment();
                putsInFlight.remove(key);
                continue;
            }
            CompletableFuture<Void> sent;
            try {
                sent = target.put(key, serialized.metadata(), serialized.payload());
            } catch (RuntimeException e) {
                sent = CompletableFuture.failedFuture(e);
            }
            sent.whenComplete((ok, failure) -> {
                if (failure == null) {
                    residency.admitted(NAME, key);
                    puts.increment();
                    putBytes.add(serialized.payload().byteSize());
                    health.succeeded();
                } else {
                    failedPuts.increment();
                    health.failed(failure);
                }
                serialized.close();
                // Last: once no put is in flight (awaitPuts, close) its counts and memory are settled.
                putsInFlight.remove(key);
            });
        }
    }

    // ---- get --------------------------------------------------------------------------------

    @Override
    public Optional<MemoryObj> getBlocking(CacheKey key) {
        CompletableFuture<Optional<MemoryObj>> future;
        RemoteConnector target = active.get();
        try {
            future = target.get(remoteKey(key), metadata -> memory.allocate(metadata.toShape(),
                    metadata.dtype().orElse(DType.UINT8), metadata.format(), AllocationMode.EVICT_AND_WAIT));
        } catch (RuntimeException e) {
            failures.increment();
            if (target == remote) {
                health.failed(e);
            }
            return Optional.empty();
        }
        Optional<Optional<MemoryObj>> result = await(target, future);
        if (result.isEmpty()) {
            // Timed out or failed: an object that still arrives must not leak.
            future.whenComplete((obj, failure) -> {
                if (obj != null) {
                    obj.ifPresent(MemoryObj::release);
                }
            });
            return Optional.empty();
        }
        return deserialized(result.get());
    }

    /** The object as the caller gets it: decoded by the serde, counted; empty (and released) when it cannot be read. */
    private Optional<MemoryObj> deserialized(Optional<MemoryObj> fetched) {
        Optional<MemoryObj> served = fetched;
        if (served.isPresent()) {
            MemoryObj stored = served.get();
            getBytes.add(stored.byteSize()); // the bytes the remote sent
            try {
                served = serde.deserialize(stored, memory); // takes over the stored object's reference
            } catch (RuntimeException e) {
                failures.increment();
                if (stored.isValid() && stored.refCount() > 0) {
                    stored.release();
                }
                return Optional.empty();
            }
        }
        served.ifPresent(obj -> gets.increment());
        return served;
    }

    /** Loads ahead of a retrieve without blocking anyone ({@link #prefetch}). */
    @Override
    public Optional<Prefetching> prefetching() {
        return Optional.of(this::prefetch);
    }

    /**
     * The remote get of {@code key} as a future: allocates without waiting for memory (a prefetch
     * never waits), decodes on a virtual thread (never on the connector's I/O thread), and answers
     * empty after {@code blocking_timeout_secs}; an object that arrives after that is released.
     * Never completes exceptionally.
     */
    private CompletableFuture<Optional<MemoryObj>> prefetch(CacheKey key) {
        CompletableFuture<Optional<MemoryObj>> result = new CompletableFuture<>();
        RemoteConnector target = active.get();
        CompletableFuture<Optional<MemoryObj>> fetched;
        try {
            fetched = target.get(remoteKey(key), metadata -> memory.allocate(metadata.toShape(),
                    metadata.dtype().orElse(DType.UINT8), metadata.format(), AllocationMode.EVICT));
        } catch (RuntimeException e) {
            failures.increment();
            if (target == remote) {
                health.failed(e);
            }
            result.complete(Optional.empty());
            return result;
        }
        fetched.whenCompleteAsync((obj, failure) -> {
            if (failure != null) {
                failures.increment();
                if (target == remote) {
                    health.failed(failure);
                }
                result.complete(Optional.empty());
                return;
            }
            if (target == remote) {
                health.succeeded();
            }
            Optional<MemoryObj> served = deserialized(obj);
            if (!result.complete(served)) {
                served.ifPresent(MemoryObj::release); // the deadline passed: nobody takes it any more
            }
        }, decoding);
        CompletableFuture.delayedExecutor(timeoutNanos, TimeUnit.NANOSECONDS).execute(() -> {
            if (result.complete(Optional.empty())) {
                timeouts.increment();
            }
        });
        return result;
    }

    @Override
    public boolean remove(CacheKey key) {
        RemoteConnector target = active.get();
        boolean removed = await(target, target.remove(key)).orElse(false);
        if (removed) {
            residency.evicted(NAME, key);
        }
        return removed;
    }

    /** Admits are the puts the store acknowledged, evicts the removals it confirmed (it evicts on its own unseen). */
    @Override
    public void setResidencyListener(ResidencyListener listener) {
        this.residency = Objects.requireNonNull(listener, "listener");
    }

    /**
     * The future's value within the deadline; empty on timeout or failure (counted, and told to
     * the health tracker when {@code target} is the store, not the stand-in blackhole).
     */
    private <T> Optional<T> await(RemoteConnector target, CompletableFuture<T> future) {
        boolean store = target == remote;
        try {
            T value = future.get(timeoutNanos, TimeUnit.NANOSECONDS);
            if (store) {
                health.succeeded();
            }
            return Optional.ofNullable(value);
        } catch (TimeoutException e) {
            timeouts.increment();
            if (store) {
                health.failed(timedOut("an operation", timeoutNanos));
            }
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        } catch (Exception e) {
            failures.increment();
            if (store) {
                health.failed(e);
            }
            return Optional.empty();
        }
    }

    private static TimeoutException timedOut(String what, long nanos) {
        return new TimeoutException(String.format(Locale.ROOT, "no answer to %s within %.1f s", what, nanos / 1e9));
    }

    // ---- accounting -------------------------------------------------------------------------

    /**
     * The tier's counters. {@code putBytes} and {@code getBytes} count the bytes sent to and read
     * from the remote (compressed, with a compressing serde). The serde's: {@code serde} its name,
     * {@code rawBytes}/{@code compressedBytes} the objects' bytes before and after compression
     * ({@link #bytesSaved()}), {@code compressNanos}/{@code decompressNanos} the time spent,
     * {@code decompressedBytes} what gets decompressed, {@code corruptEntries} compressed entries
     * that could not be read (served as misses). {@code puts} counts puts the connector reported
     * done ({@code failedPuts} those it reported failed, {@code droppedPuts} those never sent while
     * a blackhole stood in); {@code health} what the store's answers, or their absence, say.
     */
    public record Stats(boolean healthy, long puts, long putBytes, long droppedPuts, long failedPuts, long gets,
                        long getBytes, long timeouts, long failures, long pingFailures, int putsInFlight,
                        String serde, long rawBytes, long compressedBytes, long compressNanos, long decompressedBytes,
                        long decompressNanos, long corruptEntries, RemoteHealth health) {
        /** Bytes compression saved on puts. */
        public long bytesSaved() {
            return rawBytes - compressedBytes;
        }
    }

    public Stats stats() {
        RemoteSerde.Counters c = serde.counters();
        return new Stats(healthy(), puts.sum(), putBytes.sum(), droppedPuts.sum(), failedPuts.sum(), gets.sum(),
                getBytes.sum(), timeouts.sum(), failures.sum(), pingFailures.sum(), putsInFlight.size(), serde.name(),
                c.rawBytes(), c.storedBytes(), c.compressNanos(), c.decompressedBytes(), c.decompressNanos(), c.corrupt(),
                health.snapshot());
    }

    /** The remote tier's metrics, under LMCache's names where it has them. */
    @Override
    public void publishMetrics(EngineMetrics metrics) {
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:num_remote_read_requests",
                "Chunks read from the remote tier", true, gets::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:num_remote_read_bytes",
                "Bytes read from the remote tier", true, getBytes::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:num_remote_write_requests",
                "Chunks written to the remote tier", true, puts::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:num_remote_write_bytes",
                "Bytes written to the remote tier", true, putBytes::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:remote_ping_errors",
                "Health pings that failed", true, pingFailures::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:remote_put_task_num",
                "Remote puts in flight", false, putsInFlight::size));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache:remote_healthy",
                "1 while the remote answers, 0 while a blackhole stands in (lmcache4j)", false, () -> healthy() ? 1 : 0));
        remote.counters().forEach((name, counter) -> metrics.bindTierMetric(new EngineMetrics.TierMetric(
                "lmcache4j:remote_" + name, "The remote connector's " + name.replace('_', ' ') + " (lmcache4j)", true, counter)));
    }

    /** Waits until every put in flight has completed; for tests and orderly shutdown. */
    public void awaitPuts() throws InterruptedException {
        while (!putsInFlight.isEmpty()) {
            Thread.sleep(1);
        }
    }

    /**
     * Stops the health monitor, waits up to the deadline for puts in flight, closes the connector
     * and waits for the tier's threads (the monitor's ping in flight, decodes running).
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        monitor.interrupt();
        long deadline = System.nanoTime() + timeoutNanos;
        try {
            while (!putsInFlight.isEmpty() && System.nanoTime() - deadline < 0) {
                Thread.sleep(1);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            remote.close();
            decoders.shutdown();
            threads.join(JOIN_BOUND);
        }
    }
}
