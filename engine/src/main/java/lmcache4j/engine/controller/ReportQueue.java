package lmcache4j.engine.controller;

import java.util.OptionalLong;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

import lmcache4j.engine.controller.message.OpType;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.LayerCacheEngineKey;
import lmcache4j.engine.storage.ResidencyListener;

/**
 * The hand-off between the tiers and the controller worker's thread: admits and evicts go into a
 * bounded queue and the tier's thread returns at once. When the queue is full the
 * operation is dropped, counted, and a full re-sync is requested, so a slow or absent controller
 * never slows a store, an eviction or a retrieve. (An {@link ArrayBlockingQueue}'s {@code offer}
 * holds its lock for a few instructions and never waits for space; Agrona's lock-free queues need
 * {@code jdk.internal.misc.Unsafe}, which this module graph does not open.)
 */
final class ReportQueue implements ResidencyListener {
    /** One admit or evict, folded to the controller's key. */
    record Op(OpType type, String location, long key) {
    }

    private final ArrayBlockingQueue<Op> queue;
    private final Function<ChunkHash, OptionalLong> keys;
    private final LongAdder unkeyed = new LongAdder();
    private final LongAdder queued = new LongAdder();
    private final LongAdder dropped = new LongAdder();
    private final AtomicBoolean resyncRequested = new AtomicBoolean();

    /** @param keys a chunk's controller key, empty when the engine has not keyed it (such chunks are not reported) */
    ReportQueue(int capacity, Function<ChunkHash, OptionalLong> keys) {
        this.queue = new ArrayBlockingQueue<>(capacity);
        this.keys = keys;
    }

    @Override
    public void admitted(String tier, CacheKey key) {
        offer(OpType.ADMIT, tier, key);
    }

    @Override
    public void evicted(String tier, CacheKey key) {
        offer(OpType.EVICT, tier, key);
    }

    private void offer(OpType type, String tier, CacheKey key) {
        // A layerwise chunk is one controller entry: its layer 0 stands for it.
        if (key instanceof LayerCacheEngineKey layer && layer.layerId() != 0) {
            return;
        }
        OptionalLong controllerKey = keys.apply(key.chunkKey().chunkHash());
        if (controllerKey.isEmpty()) {
            unkeyed.increment(); // hashed in another process (recovered from disk): the controller cannot match it
            return;
        }
        if (queue.offer(new Op(type, tier, controllerKey.getAsLong()))) {
            queued.increment();
        } else {
            dropped.increment();
            resyncRequested.set(true);
        }
    }

    /** Admits and evicts not reported because the engine had not keyed the chunk. */
    long unkeyed() {
        return unkeyed.sum();
    }

    /** The oldest operation, or null. Only the worker's thread calls this. */
    Op poll() {
        return queue.poll();
    }

    boolean isEmpty() {
        return queue.isEmpty();
    }

    /** Whether an overflow (or anyone) asked for a full re-sync since the last call; clears the request. */
    boolean takeResyncRequest() {
        return resyncRequested.getAndSet(false);
    }

    void requestResync() {
        resyncRequested.set(true);
    }

    long queued() {
        return queued.sum();
    }

    long dropped() {
        return dropped.sum();
    }
}
