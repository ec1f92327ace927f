package lmcache4j.engine;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.ChunkedTokenDatabase;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.key.KeyFactory;
import lmcache4j.engine.key.TokenDatabase;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.TieredPrefix;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/**
 * The KV cache engine (LMCache spec §6): stores the KV of token prefixes chunk by chunk, and gives
 * back the longest cached prefix.
 *
 * <ul>
 *   <li>{@link #store} gathers each chunk of a request from the serving engine's paged KV cache
 *       into a fresh object and hands it to the tiers. A chunk that finds no memory ends the store:
 *       the prefix already gathered is kept. A store never waits for memory (unless
 *       {@code extra_config.force_store_wait}).</li>
 *   <li>{@link #retrieve} finds the longest stored prefix, scatters it into the paged cache and
 *       returns the mask of tokens it loaded. Every reference and pin it takes is released exactly
 *       once, on every path.</li>
 *   <li>{@link #lookup} counts the cached prefix tokens, optionally pinning them until
 *       {@link #lookupUnpin} (or the retrieve that names the same lookup id).</li>
 * </ul>
 * Bad input is an {@link IllegalArgumentException} raised before any chunk is stored or any byte
 * is written into the paged cache.
 *
 * <p>Thread-safe: requests may run concurrently.
 */
public final class LMCacheEngine implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LMCacheEngine.class.getName());

    private final LMCacheEngineConfig config;
    private final ModelMetadata metadata;
    private final KvConnector connector;
    private final TokenDatabase tokens;
    private final StorageManager storage;
    private final EngineMetrics metrics;
    private final AllocationMode storeMode;
    private final Map<String, TieredPrefix> lookupPins = new ConcurrentHashMap<>();
    private final Map<String, Prefetched> prefetches = new ConcurrentHashMap<>();
    private volatile boolean closed;
    /** The thread that runs layerwise copies, so they overlap the caller's compute; made on first use. */
    private volatile java.util.concurrent.ExecutorService layerCopier;

    private LMCacheEngine(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                          TokenDatabase tokens, StorageManager storage) {
        this.config = config;
        this.metadata = metadata;
        this.connector = connector;
        this.tokens = tokens;
        this.storage = storage;
        this.metrics = new EngineMetrics(metadata.modelName(), metadata.workerId());
        this.storeMode = config.extraBoolean("force_store_wait", false) ? AllocationMode.EVICT_AND_WAIT : AllocationMode.EVICT;
        LocalCpuBackend cpu = storage.cpu();
        metrics.bindTiers(new EngineMetrics.TierGauges(
                () -> cpu.allocator().stats().usedBytes(), () -> cpu.allocator().stats().liveObjects(),
                () -> cpu.allocator().stats().pinnedObjects(), cpu::size, cpu::evictions, cpu::evictionFailures));
        storage.tier(lmcache4j.engine.storage.disk.LocalDiskBackend.NAME)
                .map(lmcache4j.engine.storage.disk.LocalDiskBackend.class::cast).ifPresent(this::bindDiskMetrics);
        storage.tier(lmcache4j.engine.remote.RemoteBackend.NAME)
                .map(lmcache4j.engine.remote.RemoteBackend.class::cast).ifPresent(this::bindRemoteMetrics);
    }

    private void bindDiskMetrics(lmcache4j.engine.storage.disk.LocalDiskBackend disk) {
        tierMetric("lmcache:local_storage_usage", "Bytes of chunk files in the disk tier", false, () -> disk.stats().usedBytes());
        tierMetric("lmcache:local_disk_write_count", "Chunks written to disk (lmcache4j)", true, () -> disk.stats().writes());
        tierMetric("lmcache:local_disk_read_count", "Chunks read from disk (lmcache4j)", true, () -> disk.stats().reads());
        tierMetric("lmcache:local_disk_evict_count", "Disk-tier evictions (lmcache4j)", true, () -> disk.stats().evictions());
        tierMetric("lmcache:local_disk_dropped_puts", "Stores that skipped the disk tier: queue full (lmcache4j)", true,
                () -> disk.stats().droppedPuts());
        tierMetric("lmcache:local_disk_corrupt_reads", "Chunk files dropped for a checksum mismatch (lmcache4j)", true,
                () -> disk.stats().corruptReads());
    }

    private void bindRemoteMetrics(lmcache4j.engine.remote.RemoteBackend remote) {
        tierMetric("lmcache:num_remote_read_requests", "Chunks read from the remote tier", true, () -> remote.stats().gets());
        tierMetric("lmcache:num_remote_read_bytes", "Bytes read from the remote tier", true, () -> remote.stats().getBytes());
        tierMetric("lmcache:num_remote_write_requests", "Chunks written to the remote tier", true, () -> remote.stats().puts());
        tierMetric("lmcache:num_remote_write_bytes", "Bytes written to the remote tier", true, () -> remote.stats().putBytes());
        tierMetric("lmcache:remote_ping_errors", "Health pings that failed", true, () -> remote.stats().pingFailures());
        tierMetric("lmcache:remote_put_task_num", "Remote puts in flight", false, () -> remote.stats().putsInFlight());
        tierMetric("lmcache:remote_healthy", "1 while the remote answers, 0 while a blackhole stands in (lmcache4j)", false,
                () -> remote.stats().healthy() ? 1 : 0);
    }

    private void tierMetric(String name, String help, boolean counter, java.util.function.LongSupplier value) {
        metrics.bindTierMetric(new EngineMetrics.TierMetric(name, help, counter, value));
    }

    /**
     * An engine with a CPU tier of {@code max_local_cpu_size} and the tiers {@code extraTiers} below
     * it (search order), all owned by the engine from now on.
     */
    public static LMCacheEngine create(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                                       List<StorageBackend> extraTiers) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(metadata, "metadata");
        Objects.requireNonNull(connector, "connector");
        if (config.enableBlending()) {
            throw new IllegalArgumentException("enable_blending needs the separator's token ids from a tokenizer; "
                    + "build a SegmentTokenDatabase and use create(config, metadata, connector, tiers, tokenDatabase)");
        }
        ChunkHasher hasher = ChunkHasher.of(HashAlgorithm.fromName(config.preCachingHashAlgorithm()), config.hashSeed());
        KeyFactory keys = new KeyFactory(metadata.modelName(), metadata.worldSize(), metadata.workerId(), metadata.kvDtype());
        return create(config, metadata, connector, extraTiers,
                new ChunkedTokenDatabase(config.chunkSize(), config.saveUnfullChunk(), hasher, keys));
    }

    /** As {@link #create(LMCacheEngineConfig, ModelMetadata, KvConnector, List)} with a given token database. */
    public static LMCacheEngine create(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                                       List<StorageBackend> extraTiers, TokenDatabase tokenDatabase) {
        MemoryAllocator pool = EngineTiers.cpuPool(config, metadata);
        LocalCpuBackend cpu = new LocalCpuBackend(pool, config.cachePolicy(), config.localCpu(), config.blockingTimeoutSecs());
        List<StorageBackend> tiers = new ArrayList<>();
        try {
            EngineTiers.diskTier(config, metadata, cpu).ifPresent(tiers::add);
            EngineTiers.remoteTier(config, metadata, cpu).ifPresent(tiers::add);
        } catch (RuntimeException e) {
            tiers.forEach(StorageBackend::close);
            cpu.close();
            throw e;
        }
        tiers.addAll(extraTiers);
        StorageManager storage = new StorageManager(cpu, tiers);
        LMCacheEngine engine = new LMCacheEngine(config, metadata, connector, tokenDatabase, storage);
        LOG.log(Level.INFO, () -> "lmcache4j engine for " + metadata.modelName() + " (worker " + metadata.workerId() + "/"
                + metadata.worldSize() + "): tiers " + storage.tierNames() + ", CPU pool " + pool.stats().capacityBytes()
                + " bytes, copies on " + connector.executorName() + ", chunk " + config.chunkSize() + " tokens");
        return engine;
    }

    // ---- store ------------------------------------------------------------------------------

    /**
     * Stores the KV of {@code tokens} (those at or after the mask's {@code False} prefix), read from
     * {@code kv} at {@code slotMapping}.
     *
     * @param mask           null, or one entry per token of the form F…FT…T (Falses a multiple of the chunk size)
     * @param requestConfigs the request's configs; {@code lmcache.tag.*} entries tag the keys
     * @return the number of tokens newly stored: chunks already cached are skipped, and when memory
     *         runs out only the chunks before that point are stored
     */
    public int store(int[] tokens, boolean[] mask, PagedKvCache kv, long[] slotMapping, Map<String, String> requestConfigs) {
        ensureOpen("store");
        checkRequest(tokens, mask, kv, slotMapping);
        return storeRanges(ranges(tokens, mask, requestConfigs), kv, slotMapping);
    }

    /**
     * Stores chunks whose hashes the caller computed (LMCache's hashes + offsets mode):
     * consecutive ranges of {@code lengths[i]} tokens starting at token 0 of {@code slotMapping}.
     */
    public int storeHashes(List<ChunkHash> hashes, int[] lengths, PagedKvCache kv, long[] slotMapping,
                           Map<String, String> requestConfigs) {
        ensureOpen("store");
        List<ChunkRange> ranges = this.tokens.processHashes(hashes, lengths, requestConfigs);
        int total = ranges.isEmpty() ? 0 : ranges.getLast().end();
        if (slotMapping.length < total) {
            throw new IllegalArgumentException("slot mapping has " + slotMapping.length + " entries for " + total + " tokens");
        }
        checkCache(kv);
        return storeRanges(ranges, kv, slotMapping);
    }

    private int storeRanges(List<ChunkRange> ranges, PagedKvCache kv, long[] slots) {
        long started = System.nanoTime();
        List<CacheKey> keys = new ArrayList<>(ranges.size());
        List<MemoryObj> objs = new ArrayList<>(ranges.size());
        long copied = 0;
        long copyNanos = 0;
        int storedTokens = 0;
        boolean handedOff = false;
        try {
            for (ChunkRange range : ranges) {
                if (storage.containsLocally(range.key())) {
                    // Stored locally already: skip the copy. The remote tier is not asked: that would
                    // cost a round trip per chunk on every store (it drops duplicates itself).
                    continue;
                }
                TensorShape shape = KvConnector.chunkShape(kv, range.length());
                Optional<MemoryObj> obj = storage.cpu().allocate(shape, kv.dtype(), KvConnector.chunkFormat(kv), storeMode);
                if (obj.isEmpty()) {
                    LOG.log(Level.WARNING, "store of " + ranges.size() + " chunk(s) stopped at token " + range.start()
                            + ": no memory for more (kept the " + keys.size() + " chunk(s) before it)");
                    break;
                }
                objs.add(obj.get());
                keys.add(range.key());
                long t0 = System.nanoTime();
                copied += connector.fromPaged(kv, slots, range.start(), range.end(), obj.get());
                copyNanos += System.nanoTime() - t0;
                storedTokens += range.length();
            }
            long t0 = System.nanoTime();
            connector.finish();
            copyNanos += System.nanoTime() - t0;
            handedOff = true;
            storage.batchedPut(keys, objs, config.storeLocation());
        } finally {
            if (!handedOff) {
                objs.forEach(MemoryObj::release); // nothing half-stored
            }
        }
        metrics.recordStore(storedTokens, copied, copyNanos, System.nanoTime() - started);
        return storedTokens;
    }

    // ---- retrieve ---------------------------------------------------------------------------

    /**
     * Loads the longest stored prefix of {@code tokens} (from the mask's {@code False} prefix on)
     * into {@code kv} at {@code slotMapping}; tokens whose slot is -1 are left alone.
     *
     * @param lookupId the request's id, or null: the pins of its {@link #lookup} and the chunks its
     *                 {@link #prefetch} holds are released at the end
     * @return one entry per token: true where KV was loaded
     */
    public boolean[] retrieve(int[] tokens, boolean[] mask, PagedKvCache kv, long[] slotMapping,
                              Map<String, String> requestConfigs, String lookupId) {
        ensureOpen("retrieve");
        checkRequest(tokens, mask, kv, slotMapping);
        long started = System.nanoTime();
        boolean[] loaded = new boolean[tokens.length];
        List<ChunkRange> ranges = ranges(tokens, mask, requestConfigs);
        int requested = 0;
        for (ChunkRange r : ranges) {
            requested += r.length();
        }
        long copied = 0;
        long copyNanos = 0;
        int retrieved = 0;
        try {
            // One chunk at a time: a chunk read from a lower tier needs CPU memory, so holding the
            // whole prefix at once could wait for memory that only this retrieve holds.
            for (ChunkRange range : ranges) {
                Optional<MemoryObj> found = storage.get(range.key());
                if (found.isEmpty()) {
                    break;
                }
                MemoryObj obj = found.get();
                try {
                    TensorShape expected = KvConnector.chunkShape(kv, range.length());
                    if (!obj.shape().equals(expected) || obj.dtype() != kv.dtype() || obj.format() != KvConnector.chunkFormat(kv)) {
                        LOG.log(Level.WARNING, "retrieve stops at token " + range.start() + ": stored " + obj
                                + " does not fit this cache (expected " + expected + ")");
                        break;
                    }
                    long t0 = System.nanoTime();
                    copied += connector.toPaged(obj, kv, slotMapping, range.start(), range.end());
                    connector.finish(); // the object goes back below: its copy must be done
                    copyNanos += System.nanoTime() - t0;
                } finally {
                    obj.release();
                }
                java.util.Arrays.fill(loaded, range.start(), range.end(), true);
                retrieved += range.length();
            }
        } finally {
            if (lookupId != null) {
                lookupUnpin(lookupId);
                releasePrefetch(lookupId);
            }
        }
        metrics.recordRetrieve(requested, retrieved, copied, copyNanos, System.nanoTime() - started);
        return loaded;
    }

    // ---- layerwise ---------------------------------------------------------------------------

    /**
     * Starts a layer-by-layer store of {@code tokens} (LMCache's {@code store_layer}): each chunk is
     * kept as one {@code KV_T2D} object per layer under its layer keys. Chunks whose layer 0 is
     * already stored are skipped; the first chunk that finds no memory ends the store (the prefix is
     * kept). Advance the returned step once per layer, then finish it. The copies run on the engine's
     * copy thread, so the paged buffers must be accessible from other threads (global, shared or
     * automatic arenas, not confined ones).
     */
    public LayerwiseStore storeLayer(int[] tokens, boolean[] mask, PagedKvCache kv, long[] slotMapping,
                                     Map<String, String> requestConfigs) {
        ensureOpen("storeLayer");
        checkRequest(tokens, mask, kv, slotMapping);
        int layers = kv.layerCount();
        List<ChunkRange> toStore = new ArrayList<>();
        List<List<MemoryObj>> byLayer = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            byLayer.add(new ArrayList<>());
        }
        try {
            for (ChunkRange range : ranges(tokens, mask, requestConfigs)) {
                if (storage.contains(range.key().layer(0), false).isPresent()) {
                    continue;
                }
                Optional<List<MemoryObj>> objs = storage.cpu().allocateBatch(
                        KvConnector.layerShape(kv, range.length(), lmcache4j.allocator.MemoryFormat.KV_T2D), kv.dtype(),
                        lmcache4j.allocator.MemoryFormat.KV_T2D, layers, storeMode);
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
        return new LayerwiseStore(storage, connector, kv, slotMapping, toStore, toStore.isEmpty() ? List.of() : byLayer,
                copier(), metrics);
    }

    /**
     * Starts a layer-by-layer retrieve (LMCache's {@code retrieve_layer}) of the longest prefix whose
     * every layer is stored. Layer 0 starts copying at once; call {@code awaitLayer()} before each
     * attention layer, then {@code finish()} for the mask.
     *
     * @param lookupId a pinning lookup of this request whose pins to release at the end, or null
     */
    public LayerwiseRetrieve retrieveLayer(int[] tokens, boolean[] mask, PagedKvCache kv, long[] slotMapping,
                                           Map<String, String> requestConfigs, String lookupId) {
        ensureOpen("retrieveLayer");
        checkRequest(tokens, mask, kv, slotMapping);
        long started = System.nanoTime();
        int layers = kv.layerCount();
        List<ChunkRange> ranges = ranges(tokens, mask, requestConfigs);
        int requested = 0;
        for (ChunkRange r : ranges) {
            requested += r.length();
        }
        List<ChunkRange> found = new ArrayList<>();
        List<List<MemoryObj>> byLayer = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            byLayer.add(new ArrayList<>());
        }
        try {
            for (ChunkRange range : ranges) {
                List<MemoryObj> chunk = storage.batchedGet(range.key().splitLayers(layers));
                TensorShape expected = KvConnector.layerShape(kv, range.length(), lmcache4j.allocator.MemoryFormat.KV_T2D);
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
        int requestedTokens = requested;
        int retrievedTokens = found.stream().mapToInt(ChunkRange::length).sum();
        return new LayerwiseRetrieve(connector, kv, slotMapping, tokens.length, found, byLayer, copier(), copied -> {
            if (lookupId != null) {
                lookupUnpin(lookupId);
            }
            metrics.recordRetrieve(requestedTokens, retrievedTokens, copied, 0, System.nanoTime() - started);
        });
    }

    private java.util.concurrent.Executor copier() {
        java.util.concurrent.ExecutorService c = layerCopier;
        if (c == null) {
            synchronized (this) {
                c = layerCopier;
                if (c == null) {
                    c = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
                        Thread t = new Thread(r, "lmcache4j-layer-copy-" + metadata.modelName());
                        t.setDaemon(true);
                        return t;
                    });
                    layerCopier = c;
                }
            }
        }
        return c;
    }

    // ---- prefetch ---------------------------------------------------------------------------

    /** Objects a prefetch loaded and holds for its request until the retrieve or a cleanup. */
    private static final class Prefetched {
        private final List<MemoryObj> held = new ArrayList<>();
        private boolean released;

        synchronized void hold(MemoryObj obj) {
            if (released) {
                obj.release(); // the request was cleaned up while this chunk was loading
            } else {
                held.add(obj);
            }
        }

        synchronized void release() {
            released = true;
            held.forEach(MemoryObj::release);
            held.clear();
        }
    }

    /**
     * Loads the stored prefix of {@code tokens} from the disk tier into the CPU tier ahead of the
     * retrieve, on the disk tier's I/O threads at prefetch priority. The loaded chunks are held for
     * {@code requestId} (so they cannot be evicted before use) until {@link #retrieve} names the
     * same id or {@link #releasePrefetch} is called. A chunk that is nowhere, or for which the CPU
     * tier has no memory to spare, ends the prefix.
     *
     * @return the number of leading tokens in the CPU tier once the prefetch is done
     */
    public java.util.concurrent.CompletableFuture<Integer> prefetch(int[] tokens, Map<String, String> requestConfigs,
                                                                    String requestId) {
        ensureOpen("prefetch");
        Objects.requireNonNull(tokens, "tokens");
        Objects.requireNonNull(requestId, "requestId");
        Optional<lmcache4j.engine.storage.disk.LocalDiskBackend> disk = storage.tier(
                lmcache4j.engine.storage.disk.LocalDiskBackend.NAME).map(t -> (lmcache4j.engine.storage.disk.LocalDiskBackend) t);
        Prefetched holder = new Prefetched();
        Prefetched previous = prefetches.put(requestId, holder);
        if (previous != null) {
            previous.release();
        }
        List<ChunkRange> ranges = ranges(tokens, null, requestConfigs);
        List<java.util.concurrent.CompletableFuture<Optional<MemoryObj>>> loads = new ArrayList<>();
        List<ChunkRange> loading = new ArrayList<>();
        for (ChunkRange range : ranges) {
            if (storage.cpu().contains(range.key(), false)) {
                loads.add(null); // already in the CPU tier
            } else if (disk.isPresent() && disk.get().contains(range.key(), false)) {
                loads.add(disk.get().prefetch(range.key()));
            } else {
                break;
            }
            loading.add(range);
        }
        java.util.concurrent.CompletableFuture<?>[] pending = loads.stream().filter(Objects::nonNull)
                .toArray(java.util.concurrent.CompletableFuture[]::new);
        return java.util.concurrent.CompletableFuture.allOf(pending).handle((ignored, failure) -> {
            int tokensReady = 0;
            boolean prefix = true;
            for (int i = 0; i < loads.size(); i++) {
                java.util.concurrent.CompletableFuture<Optional<MemoryObj>> load = loads.get(i);
                if (load == null) { // already in the CPU tier
                    if (prefix) {
                        tokensReady = loading.get(i).end();
                    }
                    continue;
                }
                Optional<MemoryObj> obj = load.isCompletedExceptionally() ? Optional.empty() : load.join();
                if (obj.isEmpty()) {
                    prefix = false;
                } else if (prefix) {
                    storage.cpu().batchedSubmitPut(List.of(loading.get(i).key()), List.of(obj.get()));
                    holder.hold(obj.get());
                    tokensReady = loading.get(i).end();
                } else {
                    obj.get().release(); // loaded past a gap: not part of the prefix
                }
            }
            return tokensReady;
        });
    }

    /** Releases what a {@link #prefetch} holds for {@code requestId}; does nothing if it holds nothing. */
    public void releasePrefetch(String requestId) {
        Prefetched holder = prefetches.remove(requestId);
        if (holder != null) {
            holder.release();
        }
    }

    // ---- lookup -----------------------------------------------------------------------------

    /**
     * How many leading tokens are cached, as the end of the last cached chunk. With
     * {@code lookupId}, the hits are pinned until {@link #lookupUnpin} or the retrieve naming it.
     */
    public int lookup(int[] tokens, Map<String, String> requestConfigs, String lookupId) {
        ensureOpen("lookup");
        Objects.requireNonNull(tokens, "tokens");
        List<ChunkRange> ranges = ranges(tokens, null, requestConfigs);
        boolean layerwise = config.useLayerwise();
        int perChunk = layerwise ? metadata.numLayers() : 1;
        List<CacheKey> keys = new ArrayList<>(ranges.size() * perChunk);
        for (ChunkRange r : ranges) {
            if (layerwise) {
                keys.addAll(r.key().splitLayers(perChunk)); // a chunk is cached when all its layers are
            } else {
                keys.add(r.key());
            }
        }
        boolean pin = lookupId != null;
        if (pin) {
            lookupUnpin(lookupId); // a repeated lookup replaces the previous pins
        }
        TieredPrefix prefix = storage.batchedContains(keys, pin);
        if (pin) {
            lookupPins.put(lookupId, prefix);
            storage.touchCache();
        }
        int chunks = prefix.hits() / perChunk;
        int hitTokens = chunks == 0 ? 0 : ranges.get(chunks - 1).end();
        metrics.recordLookup(tokens.length, hitTokens);
        return hitTokens;
    }

    /** Releases the pins of lookup {@code lookupId}; does nothing if it has none. */
    public void lookupUnpin(String lookupId) {
        TieredPrefix pinned = lookupPins.remove(lookupId);
        if (pinned != null) {
            storage.unpin(pinned);
        }
    }

    // ---- maintenance ------------------------------------------------------------------------

    /** Removes every evictable chunk from every tier; returns the tokens removed. */
    public long clear() {
        ensureOpen("clear");
        return storage.clear();
    }

    /** The engine's metrics. */
    public EngineMetrics metrics() {
        return metrics;
    }

    /** The tiers. */
    public StorageManager storage() {
        return storage;
    }

    /** The effective configuration. */
    public LMCacheEngineConfig config() {
        return config;
    }

    public ModelMetadata metadata() {
        return metadata;
    }

    /** 0 when every allocator passes its invariant check, -1 otherwise (LMCache's {@code health()}). */
    public int health() {
        try {
            storage.cpu().memcheck();
            return 0;
        } catch (RuntimeException e) {
            LOG.log(Level.ERROR, "health check failed: " + e.getMessage());
            return -1;
        }
    }

    /**
     * Releases outstanding lookup pins, closes the tiers and the connector. Fails, listing them, if
     * objects are still referenced elsewhere (a leak in the caller).
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (String id : List.copyOf(lookupPins.keySet())) {
            lookupUnpin(id);
        }
        for (String id : List.copyOf(prefetches.keySet())) {
            releasePrefetch(id);
        }
        if (layerCopier != null) {
            layerCopier.shutdown();
        }
        try {
            storage.close();
        } finally {
            connector.close();
        }
    }

    private List<ChunkRange> ranges(int[] tokens, boolean[] mask, Map<String, String> requestConfigs) {
        return mask == null ? this.tokens.processTokens(tokens, requestConfigs)
                : this.tokens.processTokens(tokens, mask, requestConfigs);
    }

    private void ensureOpen(String operation) {
        if (closed) {
            throw new EngineClosedException(operation);
        }
    }

    private void checkRequest(int[] tokens, boolean[] mask, PagedKvCache kv, long[] slotMapping) {
        Objects.requireNonNull(tokens, "tokens");
        Objects.requireNonNull(slotMapping, "slotMapping");
        if (mask != null && mask.length != tokens.length) {
            throw new IllegalArgumentException("mask has " + mask.length + " entries for " + tokens.length + " tokens");
        }
        if (slotMapping.length < tokens.length) {
            throw new IllegalArgumentException("slot mapping has " + slotMapping.length + " entries for " + tokens.length + " tokens");
        }
        checkCache(kv);
    }

    private void checkCache(PagedKvCache kv) {
        Objects.requireNonNull(kv, "kv");
        if (kv.dtype() != metadata.kvDtype() || kv.layerCount() != metadata.numLayers()
                || kv.numKvHeads() != metadata.numKvHeads() || kv.headSize() != metadata.headSize()
                || (kv.layout() == lmcache4j.engine.connector.PagedLayout.MLA) != metadata.mla()) {
            throw new IllegalArgumentException("the paged KV cache (" + kv.layerCount() + " layers, " + kv.numKvHeads()
                    + " heads × " + kv.headSize() + ", " + kv.dtype().torchName() + ", " + kv.layout()
                    + ") does not match the model (" + metadata + ")");
        }
    }
}
