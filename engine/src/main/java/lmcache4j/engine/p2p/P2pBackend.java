package lmcache4j.engine.p2p;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.LayerCacheEngineKey;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmConnector;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.Prefetching;
import lmcache4j.engine.storage.StorageBackend;

/**
 * The P2P tier (LMCache's {@code P2PBackend}), below the local tiers: on a local miss it asks a
 * {@link PeerLocator} (the cache controller) which peer holds the chunk, then fetches it from that
 * peer's transfer server with an {@link LmConnector}, straight into this engine's CPU memory.
 *
 * <p><b>Never corrupt, never stuck, never leaking.</b> A fetch reads the chunk and, in the same
 * reply, its CRC32C ({@link P2pChecksums}); the chunk is offered only when
 * its metadata fits the key (dtype, length = shape × dtype) and the CRC32C of the bytes received
 * matches the peer's. Lookup and transfer together have a deadline ({@code p2p_timeout_ms}): a peer
 * that dies or stalls mid-transfer is a miss by then, and memory for a transfer that completes
 * after it is released when it does. Every failure is a counted miss; callers never see a peer's
 * exception.
 *
 * <p>Peers are read-only: a put stores nothing anywhere (each engine's own tiers keep its chunks).
 */
public final class P2pBackend implements StorageBackend, Prefetching {
    /** LMCache's backend name. */
    public static final String NAME = "P2PBackend";
    private static final System.Logger LOG = System.getLogger(P2pBackend.class.getName());
    /** How long a peer that failed the token's proof is left out of lookups before it is tried again. */
    static final long UNPROVEN_FOR_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final PeerLocator locator;
    /** The locator this tier made and closes (the controller's); empty when the caller owns it. */
    private final Optional<AutoCloseable> owned;
    private final MemoryProvider memory;
    private final String selfInstanceId;
    private final Duration timeout;
    /** The deployment's P2P token: a peer must prove it holds it, and tag every chunk with it, before a byte is read. */
    private final String token;
    private final int connections;
    private final Map<String, LmConnector> peers = new ConcurrentHashMap<>();
    private final PeerHints hints;
    private final UnprovenPeers unproven = new UnprovenPeers(4096, UNPROVEN_FOR_NANOS);
    private volatile boolean closed;
    /** Transfers and late releases not settled yet: close waits for them before the memory goes. */
    private final Set<CompletableFuture<?>> unsettled = ConcurrentHashMap.newKeySet();

    private final LongAdder lookups = new LongAdder();
    private final LongAdder lookupFailures = new LongAdder();
    private final LongAdder fetches = new LongAdder();
    private final LongAdder hits = new LongAdder();
    private final LongAdder hitBytes = new LongAdder();
    private final LongAdder timeouts = new LongAdder();
    private final LongAdder failures = new LongAdder();
    private final LongAdder unprovenPeers = new LongAdder();
    private final LongAdder rejected = new LongAdder();

    /**
     * @param locator        who holds what (the controller)
     * @param memory         where fetched chunks are allocated (the CPU tier's memory)
     * @param selfInstanceId this instance's id, never fetched from
     * @param timeout        the deadline of one fetch, lookup included
     * @param token          the peers' transfer-server secret, which every peer must prove it holds
     * @param connections    connections per peer
     */
    public P2pBackend(PeerLocator locator, MemoryProvider memory, String selfInstanceId, Duration timeout,
                      String token, int connections) {
        this(locator, Optional.empty(), memory, selfInstanceId, timeout, token, connections);
    }

    /**
     * The P2P tier of an engine with {@code enable_p2p} and {@code enable_controller}: it finds peers
     * through the controller at {@code controller_reply_url} and closes that locator with itself.
     */
    public static P2pBackend overController(ControllerPeerLocator locator, MemoryProvider memory, String selfInstanceId,
                                            Duration timeout, String token, int connections) {
        return new P2pBackend(locator, Optional.of(locator), memory, selfInstanceId, timeout, token, connections);
    }

    private P2pBackend(PeerLocator locator, Optional<AutoCloseable> owned, MemoryProvider memory, String selfInstanceId,
                       Duration timeout, String token, int connections) {
        this.owned = owned;
        this.locator = Objects.requireNonNull(locator, "locator");
        this.memory = Objects.requireNonNull(memory, "memory");
        this.selfInstanceId = Objects.requireNonNull(selfInstanceId, "selfInstanceId");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.token = Objects.requireNonNull(token, "token");
        if (token.isBlank()) {
            throw new IllegalArgumentException("a P2P tier needs the deployment's P2P token: peers are never read unauthenticated");
        }
        if (timeout.isNegative() || timeout.isZero() || connections < 1) {
            throw new IllegalArgumentException("timeout and connections must be positive, got " + timeout + ", " + connections);
        }
        this.connections = connections;
        this.hints = new PeerHints(65_536, Math.max(timeout.toNanos(), TimeUnit.SECONDS.toNanos(10)));
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean isLocal() {
        return false;
    }

    // ---- lookups ----------------------------------------------------------------------------

    @Override
    public boolean contains(CacheKey key, boolean pin) {
        return hints.get(key).isPresent() || batchedContains(List.of(key), pin) == 1;
    }

    /** One lookup for the whole run: the peer holding the longest leading run answers for it. */
    @Override
    public int batchedContains(List<? extends CacheKey> keys, boolean pin) {
        if (keys.isEmpty() || closed) {
            return 0;
        }
        Optional<PeerHolding> best = await(locateBest(keys), "lookup").flatMap(o -> o);
        if (best.isEmpty()) {
            return 0;
        }
        int n = Math.min(best.get().leadingChunks(), keys.size());
        for (int i = 0; i < n; i++) {
            hints.put(keys.get(i), best.get().peerInitUrl());
        }
        return n;
    }

    private CompletableFuture<Optional<PeerHolding>> locateBest(List<? extends CacheKey> keys) {
        lookups.increment();
        CompletableFuture<List<PeerHolding>> asked;
        try {
            asked = locator.locate(keys);
        } catch (RuntimeException e) {
            asked = CompletableFuture.failedFuture(e);
        }
        return asked.handle((holders, failure) -> {
            if (failure != null) {
                lookupFailures.increment();
                LOG.log(Level.DEBUG, "P2P lookup of " + keys.size() + " chunk(s) failed: " + failure);
                return Optional.<PeerHolding>empty();
            }
            return holders.stream()
                    .filter(h -> !h.instanceId().equals(selfInstanceId) && h.leadingChunks() > 0
                            && !h.peerInitUrl().isBlank() && !unproven.contains(h.peerInitUrl()))
                    .max(Comparator.comparingInt(PeerHolding::leadingChunks));
        });
    }

    // ---- get --------------------------------------------------------------------------------

    @Override
    public Optional<MemoryObj> getBlocking(CacheKey key) {
        if (closed) {
            return Optional.empty();
        }
        CompletableFuture<Optional<MemoryObj>> fetch = fetch(key);
        Optional<Optional<MemoryObj>> got = await(fetch, "fetch of " + key.toKeyString());
        if (got.isEmpty()) {
            // Past the deadline: whatever still arrives is released, never leaked.
            track(fetch.thenAccept(obj -> obj.ifPresent(MemoryObj::release)));
            return Optional.empty();
        }
        return got.get();
    }

    @Override
    public Optional<Prefetching> prefetching() {
        return Optional.of(this);
    }

    /** Fetches {@code key} from the peer that holds it; never completes exceptionally. */
    @Override
    public CompletableFuture<Optional<MemoryObj>> prefetch(CacheKey key) {
        CompletableFuture<Optional<MemoryObj>> fetch = fetch(key);
        // The deadline holds here too; a late object is released when it arrives.
        return fetch.copy().completeOnTimeout(null, timeout.toNanos(), TimeUnit.NANOSECONDS).thenApply(obj -> {
            if (obj == null) {
                timeouts.increment();
                track(fetch.thenAccept(late -> late.ifPresent(MemoryObj::release)));
                return Optional.empty();
            }
            return obj;
        });
    }

    /** Where the chunk is (a recent lookup's hint, else the locator), then the transfer; never exceptional. */
    private CompletableFuture<Optional<MemoryObj>> fetch(CacheKey key) {
        Optional<String> hinted = hints.get(key);
        CompletableFuture<Optional<String>> where = hinted.isPresent() ? CompletableFuture.completedFuture(hinted)
                : locateBest(List.of(key)).thenApply(best -> best.map(PeerHolding::peerInitUrl));
        return where.thenCompose(url -> url.isEmpty() ? CompletableFuture.completedFuture(Optional.<MemoryObj>empty())
                : transfer(key, url.get()));
    }

    /** The chunk from {@code peerInitUrl}, summed as it arrives, then checked against the peer's CRC32C. */
    private CompletableFuture<Optional<MemoryObj>> transfer(CacheKey key, String peerInitUrl) {
        fetches.increment();
        CompletableFuture<Optional<LmConnector.CheckedChunk>> chunk;
        try {
            chunk = peer(peerInitUrl).getChecked(key, meta -> allocateChunk(key, meta));
        } catch (RuntimeException e) {
            failures.increment();
            hints.forget(key);
            return CompletableFuture.completedFuture(Optional.empty());
        }
        return track(chunk.handle((got, failure) -> {
            if (failure != null || got.isEmpty()) {
                if (failure != null) {
                    failures.increment();
                    if (isAuthenticationFailure(failure)) {
                        setAside(peerInitUrl, failure);
                    }
                }
                hints.forget(key); // the peer evicted it, or is gone: ask again next time
                return Optional.<MemoryObj>empty();
            }
            return verified(key, peerInitUrl, got.get());
        }));
    }

    /**
     * A peer that cannot prove it holds the token: it is left out of lookups for a while and its
     * connections are closed, so a forged claim in the controller's index holds nothing here.
     */
    private void setAside(String peerInitUrl, Throwable failure) {
        if (unproven.add(peerInitUrl)) {
            unprovenPeers.increment();
            LOG.log(Level.WARNING, "P2P: peer " + peerInitUrl + " did not prove it holds the deployment's P2P token ("
                    + rootMessage(failure) + "); its chunks are misses and it is left out of lookups for "
                    + TimeUnit.NANOSECONDS.toSeconds(UNPROVEN_FOR_NANOS) + " s. A process that registered with the "
                    + "controller under a peer's name, or an instance with another p2p_token or deployment secret");
        }
        LmConnector gone = peers.remove(peerInitUrl);
        if (gone != null) {
            gone.close();
        }
    }

    private static boolean isAuthenticationFailure(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof LmSession.AuthenticationException) {
                return true;
            }
        }
        return false;
    }

    private static String rootMessage(Throwable failure) {
        Throwable t = failure;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t.getMessage();
    }

    private <T> CompletableFuture<T> track(CompletableFuture<T> future) {
        unsettled.add(future);
        future.whenComplete((v, e) -> unsettled.remove(future));
        return future;
    }

    /** The chunk when the CRC32C summed as it arrived equals the one the peer sent in the header. */
    private Optional<MemoryObj> verified(CacheKey key, String peerInitUrl, LmConnector.CheckedChunk got) {
        MemoryObj obj = got.obj();
        int actual = got.received();
        if (actual != got.tag()) {
            rejected.increment();
            LOG.log(Level.WARNING, String.format("P2P: %s from %s fails its CRC32C (peer %08x, received %08x); a miss",
                    key.toKeyString(), peerInitUrl, got.tag(), actual));
            obj.release();
            return Optional.empty();
        }
        hits.increment();
        hitBytes.add(obj.byteSize());
        return Optional.of(obj);
    }

    /** CPU memory for a chunk whose metadata fits its key; empty (the connector skips the bytes) otherwise. */
    private Optional<MemoryObj> allocateChunk(CacheKey key, RemoteMetadata meta) {
        DType keyDtype = switch (key) {
            case CacheEngineKey chunk -> chunk.dtype();
            case LayerCacheEngineKey layer -> layer.chunk().dtype();
        };
        TensorShape shape = meta.toShape();
        if (meta.dtype().isEmpty() || meta.dtype().get() != keyDtype || meta.format() == MemoryFormat.BINARY
                || shape.byteSize(keyDtype) != meta.length()) {
            rejected.increment();
            LOG.log(Level.WARNING, "P2P: a peer's " + key.toKeyString() + " does not fit its key (" + meta + "); a miss");
            return Optional.empty();
        }
        return memory.allocate(shape, keyDtype, meta.format(), AllocationMode.EVICT);
    }

    private LmConnector peer(String peerInitUrl) {
        if (closed) {
            throw new IllegalStateException(NAME + " is closed");
        }
        return peers.computeIfAbsent(peerInitUrl, url -> new LmConnector(PeerHolding.parseAddress(url), Optional.of(token), timeout,
                connections));
    }

    /** The future's value within the deadline, or empty (counted) when it takes longer or fails. */
    private <T> Optional<T> await(CompletableFuture<T> future, String what) {
        try {
            return Optional.ofNullable(future.get(timeout.toNanos(), TimeUnit.NANOSECONDS));
        } catch (TimeoutException e) {
            timeouts.increment();
            LOG.log(Level.DEBUG, "P2P: " + what + " took longer than " + timeout.toMillis() + " ms; a miss");
            return Optional.empty();
        } catch (ExecutionException e) {
            failures.increment();
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    // ---- what peers do not do ---------------------------------------------------------------

    /** Nothing is stored on peers: each engine's own tiers keep its chunks. */
    @Override
    public void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
    }

    @Override
    public boolean unpin(CacheKey key) {
        return true;
    }

    /** Forgets where {@code key} was seen; a peer's copy is the peer's. */
    @Override
    public boolean remove(CacheKey key) {
        hints.forget(key);
        return false;
    }

    @Override
    public void touchCache() {
    }

    // ---- metrics ----------------------------------------------------------------------------

    /** Counters, a snapshot. */
    /**
     * @param unprovenPeers peers set aside because they could not prove they hold the P2P token
     */
    public record Stats(long lookups, long lookupFailures, long fetches, long hits, long hitBytes, long timeouts,
                        long failures, long rejected, long unprovenPeers) {
    }

    public Stats stats() {
        return new Stats(lookups.sum(), lookupFailures.sum(), fetches.sum(), hits.sum(), hitBytes.sum(), timeouts.sum(),
                failures.sum(), rejected.sum(), unprovenPeers.sum());
    }

    @Override
    public void publishMetrics(EngineMetrics metrics) {
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:p2p_lookups",
                "Peer lookups asked of the controller", true, lookups::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:p2p_read_requests",
                "Chunks fetched from peers, verified", true, hits::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:p2p_read_bytes",
                "Bytes fetched from peers, verified", true, hitBytes::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:p2p_timeouts",
                "Peer lookups or fetches past p2p_timeout_ms", true, timeouts::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:p2p_rejected",
                "Peer chunks refused: metadata that does not fit the key, or a CRC32C mismatch", true, rejected::sum));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:p2p_unproven_peers",
                "Peers left out of lookups for a while: they could not prove they hold the P2P token", true,
                unprovenPeers::sum));
    }

    /** Closes the peer connections; transfers in flight end as misses and release their memory. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        peers.values().forEach(LmConnector::close);
        peers.clear();
        hints.clear();
        unproven.clear();
        // Closed connections end every transfer; wait until each has released what it held.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!unsettled.isEmpty() && System.nanoTime() < deadline) {
            try {
                CompletableFuture.anyOf(unsettled.toArray(CompletableFuture[]::new)).get(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (ExecutionException | TimeoutException e) {
                // settled (or not yet): look again
            }
        }
        owned.ifPresent(locator -> {
            try {
                locator.close();
            } catch (Exception e) {
                LOG.log(Level.WARNING, "closing the P2P tier's peer locator failed: " + e);
            }
        });
    }
}
