package lmcache4j.engine.storage;

import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.metrics.MetricsSource;

/**
 * The ordered tiers of one engine (LMCache spec §3.2). Search order is the order given (CPU first,
 * then disk, then remote); puts fan out to every tier, each tier taking its own reference; a get
 * returns the first hit and writes it back into the CPU tier; a tiered prefix lookup walks the
 * tiers, each answering for the part of the prefix the earlier ones lacked.
 *
 * <p>The manager is the only place that knows the CPU tier from the others: it hands out the CPU
 * tier's memory ({@link MemoryProvider}), owns every write-back into the CPU tier (gets and
 * prefetches), and asks lower tiers for their capabilities ({@link StorageBackend#prefetching()}).
 *
 * <p>Thread-safe: the tiers are, and the manager's own state is the immutable tier list plus a
 * concurrent bypass set.
 */
public final class StorageManager implements MemoryProvider, MetricsSource, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(StorageManager.class.getName());
    /** How long {@link #close} waits for prefetches in flight. */
    private static final int PREFETCH_DRAIN_SECONDS = 30;
    /** After the drain, how long the prefetch threads get to return. */
    private static final Duration PREFETCH_THREADS_JOIN = Duration.ofSeconds(5);

    private final CpuTier cpu;
    private final Map<String, StorageBackend> tiers;
    /** Bypassed tier names; read and written under its own lock, only by setBypass. */
    private final Set<String> bypassed = new HashSet<>();
    /** The listeners, replaced whole when one is added: the tiers' admits and evictions read it without a lock or garbage. */
    private volatile ResidencyListener[] listeners = new ResidencyListener[0];
    /** What the tiers report to: every listener, in the order they were set. */
    private final ResidencyListener fanOut = new ResidencyListener() {
        @Override
        public void admitted(String tier, CacheKey key) {
            for (ResidencyListener l : listeners) {
                l.admitted(tier, key);
            }
        }

        @Override
        public void evicted(String tier, CacheKey key) {
            for (ResidencyListener l : listeners) {
                l.evicted(tier, key);
            }
        }
    };
    /** The tiers not bypassed, in search order: rebuilt when a bypass changes, read without copying. */
    private volatile List<StorageBackend> active;
    /** Prefetch planning and blocking loads: virtual threads, so a slow tier never holds up another request's. */
    private final OwnedThreads threads = new OwnedThreads();
    private final ExecutorService prefetchThreads = Executors.newThreadPerTaskExecutor(threads.virtualFactory("prefetch"));
    private final Set<CompletableFuture<PrefetchedPrefix>> prefetchesInFlight = ConcurrentHashMap.newKeySet();
    private final TieredPrefetch prefetcher;
    private volatile boolean closing;

    /**
     * @param cpu    the CPU tier, first in search order and the allocator of every tier's objects
     * @param others the other tiers in search order; all of them are owned and closed by the manager
     */
    public StorageManager(CpuTier cpu, List<StorageBackend> others) {
        this.cpu = Objects.requireNonNull(cpu, "cpu");
        Map<String, StorageBackend> ordered = new LinkedHashMap<>();
        ordered.put(cpu.name(), cpu);
        for (StorageBackend tier : others) {
            if (ordered.putIfAbsent(tier.name(), tier) != null) {
                throw new IllegalArgumentException("two tiers are named " + tier.name());
            }
        }
        this.tiers = Collections.unmodifiableMap(ordered);
        this.active = List.copyOf(tiers.values());
        this.prefetcher = new TieredPrefetch(cpu, this::active, prefetchThreads, () -> closing);
    }

    /** The CPU tier. */
    public CpuTier cpu() {
        return cpu;
    }

    /** Tier names in search order. */
    public List<String> tierNames() {
        return List.copyOf(tiers.keySet());
    }

    /** The tier called {@code name}. */
    public Optional<StorageBackend> tier(String name) {
        return Optional.ofNullable(tiers.get(name));
    }

    /**
     * Skips (or stops skipping) a tier for lookups, puts and gets — used when a remote tier is
     * unhealthy. The CPU tier cannot be bypassed.
     */
    public void setBypass(String tierName, boolean bypass) {
        if (!tiers.containsKey(tierName) || tierName.equals(cpu.name())) {
            throw new IllegalArgumentException("no bypassable tier named " + tierName + "; tiers: " + tierNames());
        }
        synchronized (bypassed) {
            if (bypass) {
                bypassed.add(tierName);
            } else {
                bypassed.remove(tierName);
            }
            List<StorageBackend> list = new ArrayList<>(tiers.size());
            for (StorageBackend tier : tiers.values()) {
                if (!bypassed.contains(tier.name())) {
                    list.add(tier);
                }
            }
            active = List.copyOf(list);
        }
    }

    /**
     * Tells {@code listener} of every chunk that enters or leaves any tier from now on, besides the
     * listeners added before (the cache controller's worker, the KV-event publisher).
     */
    public void setResidencyListener(ResidencyListener listener) {
        Objects.requireNonNull(listener, "listener");
        synchronized (fanOut) {
            if (listeners.length == 0) {
                tiers.values().forEach(tier -> tier.setResidencyListener(fanOut));
            }
            ResidencyListener[] more = Arrays.copyOf(listeners, listeners.length + 1);
            more[more.length - 1] = listener;
            listeners = more;
        }
    }

    /** For each tier that can list its keys, in search order, the keys it holds now. */
    public Map<String, List<CacheKey>> residentKeys() {
        Map<String, List<CacheKey>> keys = new LinkedHashMap<>();
        tiers.forEach((name, tier) -> tier.residentKeys().ifPresent(k -> keys.put(name, k)));
        return keys;
    }

    // ---- allocation -------------------------------------------------------------------------

    /** An object from the CPU tier's memory, evicting or waiting as {@code mode} allows. */
    @Override
    public Optional<MemoryObj> allocate(TensorShape shape, DType dtype, MemoryFormat format, AllocationMode mode) {
        return cpu.allocate(shape, dtype, format, mode);
    }

    /** {@code count} objects from the CPU tier's memory, all or nothing. */
    public Optional<List<MemoryObj>> allocateBatch(TensorShape shape, DType dtype, MemoryFormat format, int count,
                                                   AllocationMode mode) {
        return cpu.allocateBatch(shape, dtype, format, count, mode);
    }

    /** Bytes the CPU tier's memory holds at most. */
    public long memoryCapacityBytes() {
        return cpu.allocator().stats().capacityBytes();
    }

    /** An object for a store: evicts from the CPU tier if needed, never waits. */
    public Optional<MemoryObj> allocateForStore(TensorShape shape, DType dtype, MemoryFormat format) {
        return cpu.allocate(shape, dtype, format, AllocationMode.EVICT);
    }

    // ---- put --------------------------------------------------------------------------------

    /**
     * Stores {@code objs[i]} under {@code keys[i]} in every active tier, then drops the caller's
     * reference to each object exactly once (a tier that keeps an object took its own).
     *
     * @param onlyTier when present, store only in that tier ({@code store_location})
     */
    public void batchedPut(List<? extends CacheKey> keys, List<MemoryObj> objs, Optional<String> onlyTier) {
        if (keys.size() != objs.size()) {
            throw new IllegalArgumentException(keys.size() + " keys but " + objs.size() + " objects");
        }
        try {
            for (StorageBackend tier : active()) {
                if (onlyTier.isPresent() && !onlyTier.get().equals(tier.name())) {
                    continue;
                }
                try {
                    Optional<AllocatorBackend> own = tier.ownAllocator();
                    if (own.isPresent() && own.get() != cpu) {
                        putCopies(tier, own.get(), keys, objs);
                    } else {
                        tier.batchedSubmitPut(keys, objs);
                    }
                } catch (RuntimeException e) {
                    // One tier's failure must not lose the others' copies.
                    LOG.log(Level.WARNING, "put of " + keys.size() + " chunk(s) to " + tier.name() + " failed: " + e);
                }
            }
        } finally {
            objs.forEach(MemoryObj::release);
        }
    }

    /**
     * LMCache's allocate-and-copy for a tier with its own allocator: copies the objects the tier
     * lacks, stopping at the first allocation failure. Unlike LMCache, which returns the first n
     * keys for the first n copies even when it skipped keys in between, each copy stays paired
     * with its own key.
     */
    private static void putCopies(StorageBackend tier, AllocatorBackend allocator, List<? extends CacheKey> keys,
                                  List<MemoryObj> objs) {
        List<CacheKey> copiedKeys = new ArrayList<>(keys.size());
        List<MemoryObj> copies = new ArrayList<>(keys.size());
        try {
            for (int i = 0; i < keys.size(); i++) {
                if (tier.contains(keys.get(i), false)) {
                    continue;
                }
                MemoryObj src = objs.get(i);
                Optional<MemoryObj> copy = allocator.allocate(src.shape(), src.dtype(), src.format(), AllocationMode.EVICT);
                if (copy.isEmpty()) {
                    break;
                }
                MemorySegment.copy(src.segment(), 0, copy.get().segment(), 0, src.byteSize());
                copiedKeys.add(keys.get(i));
                copies.add(copy.get());
            }
            if (!copies.isEmpty()) {
                tier.batchedSubmitPut(copiedKeys, copies);
            }
        } finally {
            copies.forEach(MemoryObj::release);
        }
    }

    // ---- get --------------------------------------------------------------------------------

    /**
     * The object under {@code key} from the first tier that has it, with a reference for the
     * caller. A hit below the CPU tier is written back into the CPU tier.
     */
    public Optional<MemoryObj> get(CacheKey key) {
        for (StorageBackend tier : active()) {
            Optional<MemoryObj> obj = tier.getBlocking(key);
            if (obj.isPresent()) {
                if (tier != cpu) {
                    cpu.submitPut(key, obj.get());
                }
                return obj;
            }
        }
        return Optional.empty();
    }

    /**
     * The objects of the longest stored prefix of {@code keys}, tier by tier, each with a
     * reference for the caller; objects from lower tiers are written back into the CPU tier.
     * Stops at the first key no tier can deliver.
     */
    public List<MemoryObj> batchedGet(List<? extends CacheKey> keys) {
        List<MemoryObj> found = new ArrayList<>(keys.size());
        for (CacheKey key : keys) {
            Optional<MemoryObj> obj = get(key);
            if (obj.isEmpty()) {
                break;
            }
            found.add(obj.get());
        }
        return found;
    }

    // ---- prefetch ---------------------------------------------------------------------------

    /**
     * Brings the longest prefix of {@code keys} into the CPU tier ahead of a retrieve, from every
     * tier ({@link TieredPrefetch}): each key from the highest tier that holds it, the lower tiers'
     * loads running concurrently, the prefix ending at the first key no tier holds or whose load
     * comes back empty. Returns at once: the planning (which may ask a remote store) runs on the
     * prefetch threads, never on the caller's, and never on a thread a retrieve needs.
     *
     * @return completes (never exceptionally) with the ready prefix, each object with a reference
     *         for the caller; empty once {@link #close} has begun
     */
    public CompletableFuture<PrefetchedPrefix> prefetch(List<? extends CacheKey> keys) {
        List<CacheKey> copy = List.copyOf(keys);
        CompletableFuture<PrefetchedPrefix> result = new CompletableFuture<>();
        synchronized (prefetchesInFlight) { // close() either sees this prefetch or this prefetch sees close()
            if (closing) {
                result.complete(PrefetchedPrefix.empty());
                return result;
            }
            prefetchesInFlight.add(result);
        }
        result.whenComplete((r, e) -> prefetchesInFlight.remove(result));
        try {
            prefetchThreads.execute(() -> prefetcher.run(copy, result));
        } catch (RejectedExecutionException e) {
            result.complete(PrefetchedPrefix.empty());
        }
        return result;
    }

    /** Prefetches started and not yet answered. */
    public int prefetchesInFlight() {
        return prefetchesInFlight.size();
    }

    // ---- lookups ----------------------------------------------------------------------------

    /** The first tier that holds {@code key}, pinning it there if asked. */
    public Optional<String> contains(CacheKey key, boolean pin) {
        for (StorageBackend tier : active()) {
            if (tier.contains(key, pin)) {
                return Optional.of(tier.name());
            }
        }
        return Optional.empty();
    }

    /**
     * For each of {@code keys}, whether a local tier (memory or disk, not a remote store) holds it:
     * each local tier is asked once for the keys no tier above it holds.
     */
    public boolean[] containedLocally(List<? extends CacheKey> keys) {
        boolean[] held = new boolean[keys.size()];
        for (StorageBackend tier : active()) {
            if (!tier.isLocal()) {
                continue;
            }
            List<CacheKey> asked = new ArrayList<>();
            List<Integer> at = new ArrayList<>();
            for (int i = 0; i < held.length; i++) {
                if (!held[i]) {
                    asked.add(keys.get(i));
                    at.add(i);
                }
            }
            if (asked.isEmpty()) {
                break;
            }
            boolean[] answer = tier.containsEach(asked);
            for (int j = 0; j < answer.length; j++) {
                held[at.get(j)] |= answer[j];
            }
        }
        return held;
    }

    /**
     * Tiered prefix match: the first tier answers for the longest prefix it holds, the next tier for
     * the longest prefix of the remainder, and so on; a tier with no hit passes the same remainder
     * on. With {@code pin}, every hit is pinned in the tier that answered for it.
     */
    public TieredPrefix batchedContains(List<? extends CacheKey> keys, boolean pin) {
        Map<String, List<CacheKey>> mapping = new LinkedHashMap<>();
        int hits = 0;
        for (StorageBackend tier : active()) {
            if (hits == keys.size()) {
                break;
            }
            List<? extends CacheKey> rest = keys.subList(hits, keys.size());
            int h = tier.batchedContains(rest, pin);
            if (h > 0) {
                mapping.put(tier.name(), List.copyOf(rest.subList(0, h)));
                hits += h;
            }
        }
        return new TieredPrefix(hits, mapping);
    }

    /** Undoes the pins of a {@link #batchedContains} with {@code pin}. */
    public void unpin(TieredPrefix pinned) {
        pinned.blockMapping().forEach((tierName, keys) -> {
            tiers.get(tierName).batchedUnpin(keys);
        });
    }

    // ---- maintenance ------------------------------------------------------------------------

    /** Removes {@code key} from every tier; returns how many held it. */
    public int remove(CacheKey key) {
        int removed = 0;
        for (StorageBackend tier : tiers.values()) {
            if (tier.remove(key)) {
                removed++;
            }
        }
        return removed;
    }

    /** Removes every evictable entry of every tier; returns the tokens removed. */
    public long clear() {
        long tokens = 0;
        for (StorageBackend tier : tiers.values()) {
            tokens += tier.clear();
        }
        return tokens;
    }

    /** Every tier publishes its own metrics into {@code metrics}. */
    @Override
    public void publishMetrics(EngineMetrics metrics) {
        tiers.values().forEach(tier -> tier.publishMetrics(metrics));
    }

    /** Checks the CPU tier's and its allocator's invariants; throws when one does not hold. */
    public void memcheck() {
        cpu.memcheck();
    }

    /** Applies recency updates in every tier. */
    public void touchCache() {
        for (StorageBackend tier : tiers.values()) {
            tier.touchCache();
        }
    }

    /**
     * Closes the tiers, the lowest first and the CPU tier (with its allocator) last, so that
     * objects the lower tiers still held are released before the allocator checks for leaks.
     * Every tier is closed even if one fails; the first failure is rethrown.
     */
    @Override
    public void close() {
        awaitPrefetches();
        List<StorageBackend> order = new ArrayList<>(tiers.values());
        Collections.reverse(order);
        RuntimeException first = null;
        for (StorageBackend tier : order) {
            try {
                tier.close();
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "closing " + tier.name() + " failed: " + e);
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /**
     * Stops new prefetches and waits (up to {@value #PREFETCH_DRAIN_SECONDS} s) for those in flight,
     * so none writes into a tier that is closing; their objects reach their callers, who drop them.
     */
    private void awaitPrefetches() {
        synchronized (prefetchesInFlight) {
            closing = true;
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PREFETCH_DRAIN_SECONDS);
        for (CompletableFuture<PrefetchedPrefix> inFlight : List.copyOf(prefetchesInFlight)) {
            try {
                inFlight.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                LOG.log(Level.WARNING, "a prefetch was still loading when the tiers closed");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (ExecutionException e) {
                // completed: prefetches never fail, and if one did it holds nothing
            }
        }
        prefetchThreads.shutdown();
        threads.join(PREFETCH_THREADS_JOIN); // those whose prefetch timed out above are named in a warning
    }

    private List<StorageBackend> active() {
        return active;
    }
}
