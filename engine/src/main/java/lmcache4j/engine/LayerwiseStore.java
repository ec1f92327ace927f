package lmcache4j.engine;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.LayerCacheEngineKey;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.StorageManager;

/**
 * A layer-by-layer store (LMCache's {@code store_layer} generator, spec §6.3), advanced by the
 * caller once per attention layer: after the model has written layer {@code i}'s KV, the caller
 * calls {@link #layerReady()}; the gather of layer {@code i} then runs on the engine's copy thread
 * while the caller computes layer {@code i + 1}, and is handed to the tiers at the next step.
 * {@link #finish()} waits for the last layer and returns the tokens stored.
 *
 * <p>Objects not yet handed to the tiers are released by {@link #close()} (also on errors), so an
 * abandoned store leaks nothing.
 */
public final class LayerwiseStore implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LMCacheEngine.class.getName());
    private final StorageManager storage;
    private final KvConnector connector;
    private final PagedKvCache kv;
    private final long[] slots;
    private final List<ChunkRange> chunks;
    /** objs.get(layer).get(chunk), for the chunks that got memory. */
    private final List<List<MemoryObj>> objs;
    private final Executor copier;
    private final int storedTokens;
    private final EngineMetrics metrics;
    private final long startedNanos = System.nanoTime();
    private long copyNanos;
    private int nextLayer;
    private CompletableFuture<Long> pending = CompletableFuture.completedFuture(0L);
    private int pendingLayer = -1;
    private long copiedBytes;
    private boolean finished;

    /**
     * Allocates one {@code KV_T2D} object per layer for each chunk of {@code ranges} whose layer 0
     * is not stored yet; the first chunk that finds no memory ends the store (the prefix is kept).
     */
    static LayerwiseStore start(StorageManager storage, KvConnector connector, PagedKvCache kv, long[] slots,
                                List<ChunkRange> ranges, AllocationMode mode, Executor copier, EngineMetrics metrics) {
        int layers = kv.layerCount();
        List<ChunkRange> toStore = new ArrayList<>();
        List<List<MemoryObj>> byLayer = emptyLayers(layers);
        try {
            for (ChunkRange range : ranges) {
                if (storage.contains(range.key().layer(0), false).isPresent()) {
                    continue;
                }
                Optional<List<MemoryObj>> objs = storage.allocateBatch(
                        KvConnector.layerShape(kv, range.length(), MemoryFormat.KV_T2D), kv.dtype(),
                        MemoryFormat.KV_T2D, layers, mode);
                if (objs.isEmpty()) {
                    LOG.log(Level.WARNING, "layerwise store stopped at token " + range.start() + ": no memory for more");
                    break;
                }
                toStore.add(range);
                for (int l = 0; l < layers; l++) {
                    byLayer.get(l).add(objs.get().get(l));
                }
            }
        } catch (RuntimeException e) {
            byLayer.forEach(list -> list.forEach(MemoryObj::release));
            throw e;
        }
        return new LayerwiseStore(storage, connector, kv, slots, toStore, toStore.isEmpty() ? List.of() : byLayer,
                copier, metrics);
    }

    /** One empty list per layer. */
    static List<List<MemoryObj>> emptyLayers(int layers) {
        List<List<MemoryObj>> byLayer = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            byLayer.add(new ArrayList<>());
        }
        return byLayer;
    }

    LayerwiseStore(StorageManager storage, KvConnector connector, PagedKvCache kv, long[] slots, List<ChunkRange> chunks,
                   List<List<MemoryObj>> objs, Executor copier, EngineMetrics metrics) {
        this.metrics = metrics;
        this.storage = storage;
        this.connector = connector;
        this.kv = kv;
        this.slots = slots;
        this.chunks = chunks;
        this.objs = objs;
        this.copier = copier;
        int tokens = 0;
        for (int c = 0; c < (objs.isEmpty() ? 0 : objs.getFirst().size()); c++) {
            tokens += chunks.get(c).length();
        }
        this.storedTokens = tokens;
    }

    /** Layers the model has. */
    public int layers() {
        return kv.layerCount();
    }

    /** Tokens this store will hold when finished (chunks that found memory). */
    public int tokens() {
        return storedTokens;
    }

    /**
     * The model has written the next layer's KV: start copying it, and hand the previous layer's
     * copies to the tiers.
     *
     * @throws IllegalStateException when called more often than there are layers
     */
    public void layerReady() {
        if (nextLayer >= kv.layerCount() || finished) {
            throw new IllegalStateException("layerReady called " + (nextLayer + 1) + " times for " + kv.layerCount() + " layers");
        }
        completePending();
        int layer = nextLayer++;
        if (!objs.isEmpty()) {
            List<MemoryObj> layerObjs = objs.get(layer);
            pendingLayer = layer;
            pending = CompletableFuture.supplyAsync(() -> {
                long t0 = System.nanoTime();
                long bytes = 0;
                for (int c = 0; c < layerObjs.size(); c++) {
                    ChunkRange r = chunks.get(c);
                    bytes += connector.fromPagedLayer(kv, slots, layer, r.start(), r.end(), layerObjs.get(c));
                }
                connector.finish();
                copyNanos += System.nanoTime() - t0; // written on the copy thread, read after get()
                return bytes;
            }, copier);
        }
    }

    /** Waits for the last layer's copy, hands it to the tiers and returns the tokens stored. */
    public int finish() {
        if (nextLayer != kv.layerCount()) {
            throw new IllegalStateException("finish after " + nextLayer + " of " + kv.layerCount() + " layers");
        }
        completePending();
        finished = true;
        metrics.recordStore(storedTokens, copiedBytes, copyNanos, System.nanoTime() - startedNanos);
        return storedTokens;
    }

    /** Bytes the copies moved so far. */
    public long copiedBytes() {
        return copiedBytes;
    }

    private void completePending() {
        if (pendingLayer < 0) {
            return;
        }
        int layer = pendingLayer;
        pendingLayer = -1;
        try {
            copiedBytes += pending.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while layer " + layer + " was being copied", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("copying layer " + layer + " failed: " + e.getCause(), e.getCause());
        }
        List<MemoryObj> layerObjs = objs.get(layer);
        List<LayerCacheEngineKey> keys = new ArrayList<>(layerObjs.size());
        for (int c = 0; c < layerObjs.size(); c++) {
            keys.add(chunks.get(c).key().layer(layer));
        }
        List<MemoryObj> handed = List.copyOf(layerObjs);
        layerObjs.clear(); // from here the tiers own these references
        storage.batchedPut(keys, handed, Optional.empty());
    }

    /** Releases every object not handed to the tiers (an abandoned or failed store). */
    @Override
    public void close() {
        if (pendingLayer >= 0) {
            pending.exceptionally(e -> 0L).join(); // a failed copy is reported by layerReady/finish, not here
            pendingLayer = -1;
        }
        for (List<MemoryObj> layerObjs : objs) {
            layerObjs.forEach(MemoryObj::release);
            layerObjs.clear();
        }
        finished = true;
    }
}
