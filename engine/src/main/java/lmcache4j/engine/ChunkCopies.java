package lmcache4j.engine;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.connector.ChunkMismatchException;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.StorageManager;

/**
 * Whole-chunk stores and retrieves: a store allocates each chunk not held locally yet, copies it out
 * of the serving engine's KV and hands the batch to the tiers (nothing half-stored on failure); a
 * retrieve loads the longest stored prefix, one chunk at a time, from the request's prefetch or the
 * tiers, and never leaves a hole.
 */
final class ChunkCopies {
    private static final System.Logger LOG = System.getLogger(LMCacheEngine.class.getName());

    private final StorageManager storage;
    private final EngineMetrics metrics;
    private final AllocationMode storeMode;
    private final Optional<String> storeLocation;
    private final Prefetches prefetches;
    private final LookupPins lookupPins;

    ChunkCopies(StorageManager storage, EngineMetrics metrics, AllocationMode storeMode, Optional<String> storeLocation,
                Prefetches prefetches, LookupPins lookupPins) {
        this.storage = storage;
        this.metrics = metrics;
        this.storeMode = storeMode;
        this.storeLocation = storeLocation;
        this.prefetches = prefetches;
        this.lookupPins = lookupPins;
    }

    int store(List<ChunkRange> ranges, ChunkTransfer kv) {
        long started = System.nanoTime();
        List<CacheKey> keys = new ArrayList<>(ranges.size());
        List<MemoryObj> objs = new ArrayList<>(ranges.size());
        long copied = 0;
        long copyNanos = 0;
        int storedTokens = 0;
        boolean handedOff = false;
        // Which chunks are stored locally already, asked once for all of them (one CPU-tier lock
        // acquisition instead of one per chunk).
        boolean[] local = storage.containedLocally(ChunkRanges.keysOf(ranges));
        try {
            for (int r = 0; r < ranges.size(); r++) {
                ChunkRange range = ranges.get(r);
                if (local[r]) {
                    // Stored locally already: skip the copy. The remote tier is not asked: that would
                    // cost a round trip per chunk on every store (it drops duplicates itself).
                    continue;
                }
                TensorShape shape = kv.shape(range.length());
                Optional<MemoryObj> obj = storage.allocate(shape, kv.dtype(), kv.format(), storeMode);
                if (obj.isEmpty()) {
                    LOG.log(Level.WARNING, "store of " + ranges.size() + " chunk(s) stopped at token " + range.start()
                            + ": no memory for more (kept the " + keys.size() + " chunk(s) before it)");
                    break;
                }
                objs.add(obj.get());
                keys.add(range.key());
                long t0 = System.nanoTime();
                copied += kv.gather(range.start(), range.end(), obj.get());
                copyNanos += System.nanoTime() - t0;
                storedTokens += range.length();
            }
            long t0 = System.nanoTime();
            kv.finish();
            copyNanos += System.nanoTime() - t0;
            handedOff = true;
            storage.batchedPut(keys, objs, storeLocation);
        } finally {
            if (!handedOff) {
                objs.forEach(MemoryObj::release); // nothing half-stored
            }
        }
        metrics.recordStore(storedTokens, copied, copyNanos, System.nanoTime() - started);
        return storedTokens;
    }

    boolean[] retrieve(PreparedRequest request, ChunkTransfer kv, String lookupId) {
        long started = System.nanoTime();
        boolean[] loaded = new boolean[request.tokenCount()];
        List<ChunkRange> ranges = request.chunksToProcess();
        int requested = ChunkRanges.tokensIn(ranges);
        long copied = 0;
        long copyNanos = 0;
        int retrieved = 0;
        RequestPrefetch prefetched = lookupId == null ? null : prefetches.takeForRetrieve(lookupId);
        try {
            // One chunk at a time: a chunk read from a lower tier needs CPU memory, so holding the
            // whole prefix at once could wait for memory that only this retrieve holds.
            for (ChunkRange range : ranges) {
                Optional<MemoryObj> found = prefetched == null ? Optional.empty() : prefetched.take(range.key());
                if (found.isPresent()) {
                    prefetches.retrievedChunk();
                } else {
                    found = storage.get(range.key());
                }
                if (found.isEmpty()) {
                    break;
                }
                MemoryObj obj = found.get();
                try {
                    long t0 = System.nanoTime();
                    copied += kv.scatter(obj, range.start(), range.end());
                    kv.finish(); // the object goes back below: its copy must be done
                    copyNanos += System.nanoTime() - t0;
                } catch (ChunkMismatchException e) {
                    // Checked once, by the copy itself, before any byte moves: a miss from here on.
                    LOG.log(Level.WARNING, "retrieve stops at token " + range.start() + ": stored " + e.getMessage());
                    break;
                } finally {
                    obj.release();
                }
                Arrays.fill(loaded, range.start(), range.end(), true);
                retrieved += range.length();
            }
        } finally {
            if (lookupId != null) {
                lookupPins.release(lookupId);
            }
            if (prefetched != null) {
                prefetches.consumed(prefetched);
            }
        }
        metrics.recordRetrieve(requested, retrieved, copied, copyNanos, System.nanoTime() - started);
        return loaded;
    }
}
