package lmcache4j.engine;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.storage.StorageManager;

/**
 * The prefetches in flight, by request id (LMCache's {@code EventManager}): each brings a prefix into
 * the CPU tier and holds it until the retrieve naming its id takes it, {@link #release} is called,
 * or {@code pin_timeout_sec} passes. Counts what it did for {@link PrefetchStats}.
 */
final class Prefetches {
    private static final System.Logger LOG = System.getLogger(LMCacheEngine.class.getName());

    private final StorageManager storage;
    private final LMCacheEngineConfig config;
    private final EngineThreads threads;
    private final Map<String, RequestPrefetch> inFlight = new ConcurrentHashMap<>();
    private final LongAdder started = new LongAdder();
    private final LongAdder consumed = new LongAdder();
    private final LongAdder cancelled = new LongAdder();
    private final LongAdder expired = new LongAdder();
    private final LongAdder refused = new LongAdder();
    private final LongAdder chunks = new LongAdder();
    private final LongAdder lowerTierChunks = new LongAdder();
    private final LongAdder retrievedChunks = new LongAdder();

    Prefetches(StorageManager storage, LMCacheEngineConfig config, EngineThreads threads) {
        this.storage = storage;
        this.config = config;
        this.threads = threads;
    }

    /**
     * Starts the prefetch of {@code ranges} for {@code requestId} (replacing one with the same id).
     *
     * @return completes with the leading tokens made ready
     */
    CompletableFuture<Integer> start(List<ChunkRange> ranges, String requestId) {
        if (inFlight.size() >= config.maxPendingPrefetches() && !inFlight.containsKey(requestId)) {
            // Racing starts may pass together: the bound is exceeded by at most the callers at once.
            if (refused.sum() == 0) {
                LOG.log(Level.WARNING, "max_pending_prefetches (" + config.maxPendingPrefetches() + ") prefetches are "
                        + "held for requests no retrieve has come for yet; new ones are refused (a miss) and counted");
            }
            refused.increment();
            return CompletableFuture.completedFuture(0);
        }
        RequestPrefetch request = new RequestPrefetch();
        RequestPrefetch previous = inFlight.put(requestId, request);
        if (previous != null) {
            previous.release();
            cancelled.increment();
        }
        started.increment();
        request.expiresWith(threads.timer().schedule(() -> {
            if (inFlight.remove(requestId, request)) {
                request.release();
                expired.increment();
            }
        }, config.pinTimeoutSec(), TimeUnit.SECONDS));
        storage.prefetch(ChunkRanges.keysOf(ranges)).whenComplete((ready, failure) -> {
            if (failure != null) { // prefetches complete normally; this is the last guard
                request.ready().complete(0);
                return;
            }
            request.hold(ready.keys(), ready.objects());
            chunks.add(ready.chunks());
            ready.chunksByTier().forEach((tier, n) -> {
                if (!tier.equals(storage.cpu().name())) {
                    lowerTierChunks.add(n);
                }
            });
            request.ready().complete(ready.chunks() == 0 ? 0 : ranges.get(ready.chunks() - 1).end());
        });
        return request.ready().copy();
    }

    /**
     * The prefetch of {@code requestId}, taken out of the registry for its retrieve (null if none),
     * once it is ready or {@code blocking_timeout_secs} passed: a retrieve never waits longer.
     */
    RequestPrefetch takeForRetrieve(String requestId) {
        RequestPrefetch prefetched = inFlight.remove(requestId);
        if (prefetched == null) {
            return null;
        }
        try {
            prefetched.ready().get(config.blockingTimeoutSecs(), TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            LOG.log(Level.WARNING, "the prefetch of " + requestId + " is still loading; the retrieve goes on without it");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            // prefetches complete normally
        }
        return prefetched;
    }

    /** A retrieve read one chunk from its prefetch. */
    void retrievedChunk() {
        retrievedChunks.increment();
    }

    /** A retrieve is done with its prefetch: what it did not take goes back. */
    void consumed(RequestPrefetch prefetched) {
        prefetched.release();
        consumed.increment();
    }

    /** Releases what the prefetch of {@code requestId} holds; does nothing if there is none. */
    void release(String requestId) {
        RequestPrefetch request = inFlight.remove(requestId);
        if (request != null) {
            request.release();
            cancelled.increment();
        }
    }

    /**
     * Releases every prefetch (the engine closing). Returns them, so the caller releases them once
     * more after stopping the timer: a prefetch still loading hands its objects to a released
     * request, which drops them.
     */
    List<RequestPrefetch> releaseAll() {
        List<RequestPrefetch> held = new ArrayList<>(inFlight.values());
        for (String id : List.copyOf(inFlight.keySet())) {
            release(id);
        }
        return held;
    }

    PrefetchStats stats() {
        return new PrefetchStats(started.sum(), consumed.sum(), cancelled.sum(), expired.sum(), refused.sum(), inFlight.size(),
                chunks.sum(), lowerTierChunks.sum(), retrievedChunks.sum());
    }
}
