package lmcache4j.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.function.LongConsumer;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.StorageManager;

/**
 * A layer-by-layer retrieve (LMCache's {@code retrieve_layer} generator, spec §6.5). The copy of
 * layer 0 starts when the retrieve is created; before the model runs attention layer {@code i}
 * the caller calls {@link #awaitLayer()}, which waits for layer {@code i}'s KV to be in place and
 * starts copying layer {@code i + 1} meanwhile. {@link #finish()} returns the mask of loaded
 * tokens. Every reference taken is released exactly once, by {@code finish} or {@link #close()}.
 */
public final class LayerwiseRetrieve implements AutoCloseable {
    private final KvConnector connector;
    private final PagedKvCache kv;
    private final long[] slots;
    private final List<ChunkRange> chunks;
    /** objs.get(layer).get(chunk). */
    private final List<List<MemoryObj>> objs;
    private final Executor copier;
    private final boolean[] loaded;
    private final LongConsumer onDone;
    private int nextLayer;
    private CompletableFuture<Long> inFlight;
    private long copiedBytes;
    private boolean released;

    /** What a layerwise retrieve tells its engine when it ends: tokens asked for, tokens loaded, bytes copied. */
    interface Done {
        void done(int requestedTokens, int retrievedTokens, long copiedBytes);
    }

    /**
     * {@link #start(StorageManager, KvConnector, PagedKvCache, long[], PreparedRequest, Executor, Done)}
     * for an engine: the retrieve is recorded in {@code metrics} and the pins of lookup
     * {@code lookupId} (when not null) are released when it ends.
     */
    static LayerwiseRetrieve start(StorageManager storage, KvConnector connector, PagedKvCache kv, long[] slots,
                                   PreparedRequest request, Executor copier, EngineMetrics metrics, LookupPins pins,
                                   String lookupId) {
        long started = System.nanoTime();
        return start(storage, connector, kv, slots, request, copier, (requested, retrieved, copied) -> {
            if (lookupId != null) {
                pins.release(lookupId);
            }
            metrics.recordRetrieve(requested, retrieved, copied, 0, System.nanoTime() - started);
        });
    }

    /**
     * Takes every layer of each chunk of {@code request}, up to the first chunk some layer of which
     * is missing or does not fit {@code kv}, and starts copying layer 0.
     */
    static LayerwiseRetrieve start(StorageManager storage, KvConnector connector, PagedKvCache kv, long[] slots,
                                   PreparedRequest request, Executor copier, Done done) {
        int layers = kv.layerCount();
        List<ChunkRange> ranges = request.chunksToProcess();
        int requested = ChunkRanges.tokensIn(ranges);
        List<ChunkRange> found = new ArrayList<>();
        List<List<MemoryObj>> byLayer = LayerwiseStore.emptyLayers(layers);
        try {
            for (ChunkRange range : ranges) {
                List<MemoryObj> chunk = storage.batchedGet(range.key().splitLayers(layers));
                TensorShape expected = KvConnector.layerShape(kv, range.length(), MemoryFormat.KV_T2D);
                boolean usable = chunk.size() == layers
                        && chunk.stream().allMatch(o -> o.shape().equals(expected) && o.dtype() == kv.dtype());
                if (!usable) {
                    chunk.forEach(MemoryObj::release);
                    break;
                }
                found.add(range);
                for (int l = 0; l < layers; l++) {
                    byLayer.get(l).add(chunk.get(l));
                }
            }
        } catch (RuntimeException e) {
            byLayer.forEach(list -> list.forEach(MemoryObj::release));
            throw e;
        }
        int retrieved = ChunkRanges.tokensIn(found);
        return new LayerwiseRetrieve(connector, kv, slots, request.tokenCount(), found, byLayer, copier,
                copied -> done.done(requested, retrieved, copied));
    }

    LayerwiseRetrieve(KvConnector connector, PagedKvCache kv, long[] slots, int tokenCount, List<ChunkRange> chunks,
                      List<List<MemoryObj>> objs, Executor copier, LongConsumer onDone) {
        this.connector = connector;
        this.kv = kv;
        this.slots = slots;
        this.chunks = chunks;
        this.objs = objs;
        this.copier = copier;
        this.onDone = onDone;
        this.loaded = new boolean[tokenCount];
        for (ChunkRange r : chunks) {
            Arrays.fill(loaded, r.start(), r.end(), true);
        }
        this.inFlight = start(0);
    }

    /** Tokens this retrieve loads (the cached prefix); known before any layer is copied. */
    public int tokens() {
        int n = 0;
        for (ChunkRange r : chunks) {
            n += r.length();
        }
        return n;
    }

    /**
     * Waits until the next layer's KV is in the paged cache, and starts copying the one after.
     *
     * @throws IllegalStateException when called more often than there are layers
     */
    public void awaitLayer() {
        if (nextLayer >= kv.layerCount()) {
            throw new IllegalStateException("awaitLayer called " + (nextLayer + 1) + " times for " + kv.layerCount() + " layers");
        }
        int layer = nextLayer++;
        try {
            copiedBytes += inFlight.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while layer " + layer + " was being loaded", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("loading layer " + layer + " failed: " + e.getCause(), e.getCause());
        }
        inFlight = nextLayer < kv.layerCount() ? start(nextLayer) : CompletableFuture.completedFuture(0L);
    }

    /** After the last layer: releases the references and returns the mask of loaded tokens. */
    public boolean[] finish() {
        if (nextLayer != kv.layerCount()) {
            throw new IllegalStateException("finish after " + nextLayer + " of " + kv.layerCount() + " layers");
        }
        close();
        return loaded.clone();
    }

    /** Bytes copied so far. */
    public long copiedBytes() {
        return copiedBytes;
    }

    private CompletableFuture<Long> start(int layer) {
        if (chunks.isEmpty()) {
            return CompletableFuture.completedFuture(0L);
        }
        List<MemoryObj> layerObjs = objs.get(layer);
        return CompletableFuture.supplyAsync(() -> {
            long bytes = 0;
            for (int c = 0; c < chunks.size(); c++) {
                ChunkRange r = chunks.get(c);
                bytes += connector.toPagedLayer(layerObjs.get(c), kv, slots, layer, r.start(), r.end());
            }
            connector.finish();
            return bytes;
        }, copier);
    }

    /** Waits for any copy in flight and releases every reference (idempotent). */
    @Override
    public void close() {
        if (released) {
            return;
        }
        released = true;
        try {
            inFlight.exceptionally(e -> 0L).join();
        } finally {
            objs.forEach(layer -> layer.forEach(MemoryObj::release));
            onDone.accept(copiedBytes);
        }
    }
}
