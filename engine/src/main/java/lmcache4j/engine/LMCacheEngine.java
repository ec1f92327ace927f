package lmcache4j.engine;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.ChunkedTokenDatabase;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.key.KeyFactory;
import lmcache4j.engine.key.TokenDatabase;
import lmcache4j.engine.controller.ControllerWorker;
import lmcache4j.engine.controller.ControllerWorkerSettings;
import lmcache4j.engine.controller.WorkerControls;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.config.P2pSettings;
import lmcache4j.engine.p2p.P2pBackend;
import lmcache4j.engine.p2p.PeerLocator;
import lmcache4j.engine.storage.ResidencyListener;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.TieredPrefix;

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
    /** Chunk digests the lookup service can resolve from their folds (about 16 MiB of heap when full). */
    private static final int FOLDED_HASH_CAPACITY = 1 << 18;

    private final LMCacheEngineConfig config;
    private final ModelMetadata metadata;
    private final KvConnector connector;
    private final TokenDatabase tokens;
    private final StorageManager storage;
    private final EngineMetrics metrics;
    private final AllocationMode storeMode;
    private final Map<String, LookupPin> lookupPins = new ConcurrentHashMap<>();
    /** Lookup pins the pin monitor released because no retrieve or unpin came within {@code pin_timeout_sec}. */
    private final LongAdder lookupPinsExpired = new LongAdder();
    /** Whether the scan for expired lookup pins is scheduled (on the first pinning lookup). */
    private final AtomicBoolean pinMonitorStarted = new AtomicBoolean();
    private final Map<String, RequestPrefetch> prefetches = new ConcurrentHashMap<>();
    /** Folded chunk hashes → digests, for the lookup service; null unless {@code enable_async_loading}. */
    private final FoldedHashIndex foldedHashes;
    /** Ends prefetches no retrieve consumed and lookup pins no retrieve released within {@code pin_timeout_sec}; made on first use. */
    private volatile ScheduledExecutorService prefetchExpiry;
    private final LongAdder prefetchesStarted = new LongAdder();
    private final LongAdder prefetchesConsumed = new LongAdder();
    private final LongAdder prefetchesCancelled = new LongAdder();
    private final LongAdder prefetchesExpired = new LongAdder();
    private final LongAdder prefetchedChunks = new LongAdder();
    private final LongAdder prefetchedLowerTierChunks = new LongAdder();
    private final LongAdder retrievedPrefetchedChunks = new LongAdder();
    private volatile boolean closed;
    /** The cache controller's worker, when {@code enable_controller} is set. */
    private volatile ControllerWorker controllerWorker;
    /** The thread that runs layerwise copies, so they overlap the caller's compute; made on first use. */
    private volatile ExecutorService layerCopier;

    private LMCacheEngine(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                          TokenDatabase tokens, StorageManager storage) {
        this.config = config;
        this.metadata = metadata;
        this.connector = connector;
        this.tokens = tokens;
        this.storage = storage;
        this.metrics = new EngineMetrics(metadata.modelName(), metadata.workerId());
        this.storeMode = config.storeWaitsForMemory() ? AllocationMode.EVICT_AND_WAIT : AllocationMode.EVICT;
        this.foldedHashes = config.enableAsyncLoading() ? new FoldedHashIndex(FOLDED_HASH_CAPACITY) : null;
        storage.publishMetrics(metrics);
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:host_copy_bytes",
                "Bytes the connector copied between the paged KV cache and host memory on the host (lmcache4j)", true,
                connector::hostCopiedBytes));
        metrics.bindTierMetric(new EngineMetrics.TierMetric("lmcache4j:host_copy_streamed_bytes",
                "Of lmcache4j:host_copy_bytes, the bytes written with streaming (non-temporal) stores (lmcache4j)", true,
                connector::streamedBytes));
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
        // With enable_p2p and enable_controller, the P2P tier finds peers through the controller.
        if (config.p2p().isPresent() && !config.enableController()) {
            throw new IllegalArgumentException("enable_p2p needs enable_controller (the controller says which peer holds "
                    + "a chunk, as in LMCache); for a fixed set of peers without one, use createWithPeers with a "
                    + "ProbingPeerLocator");
        }
        return create(config, metadata, connector, extraTiers, tokenDatabase, EngineTiers.controllerP2pTier(config, metadata));
    }

    /**
     * An engine with {@code enable_p2p}: below its own tiers, the P2P tier ({@link P2pBackend}) asks
     * {@code locator} (the cache controller) which peer holds a chunk this engine misses and fetches
     * it from that peer's transfer server. Serving this engine's tiers to peers is the server
     * module's {@code P2pTransferServer}.
     *
     * @param instanceId this instance's {@code lmcache_instance_id}, never fetched from
     * @throws IllegalArgumentException when the config does not enable P2P or lacks its settings
     */
    @SuppressWarnings("exports") // for lmcache4j's own processes: PeerLocator is exported to them only
    public static LMCacheEngine createWithPeers(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                                                PeerLocator locator, String instanceId) {
        P2pSettings p2p = config.p2p().orElseThrow(() -> new IllegalArgumentException(
                "createWithPeers needs enable_p2p (with p2p_host and p2p_init_ports) in the config"));
        Objects.requireNonNull(locator, "locator");
        Objects.requireNonNull(instanceId, "instanceId");
        ChunkHasher hasher = ChunkHasher.of(HashAlgorithm.fromName(config.preCachingHashAlgorithm()), config.hashSeed());
        KeyFactory keys = new KeyFactory(metadata.modelName(), metadata.worldSize(), metadata.workerId(), metadata.kvDtype());
        return create(config, metadata, connector, List.of(),
                new ChunkedTokenDatabase(config.chunkSize(), config.saveUnfullChunk(), hasher, keys),
                Optional.of(memory -> new P2pBackend(locator, memory, instanceId, p2p.timeout(), p2p.token(),
                        p2p.connections())));
    }

    private static LMCacheEngine create(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                                        List<StorageBackend> extraTiers, TokenDatabase tokenDatabase,
                                        Optional<Function<MemoryProvider, StorageBackend>> lowest) {
        StorageManager storage = EngineTiers.open(config, metadata, extraTiers, lowest);
        LMCacheEngine engine = new LMCacheEngine(config, metadata, connector, tokenDatabase, storage);
        if (config.enableController()) {
            try {
                engine.controllerWorker = ControllerWorker.start(
                        ControllerWorkerSettings.from(config, metadata.workerId()), engine.new Controls());
                engine.controllerWorker.publishMetrics(engine.metrics);
            } catch (RuntimeException e) {
                engine.close();
                throw e;
            }
        }
        LOG.log(Level.INFO, () -> "lmcache4j engine for " + metadata.modelName() + " (worker " + metadata.workerId() + "/"
                + metadata.worldSize() + "): tiers " + storage.tierNames() + ", CPU pool " + storage.memoryCapacityBytes()
                + " bytes, copies on " + connector.executorName() + " (" + connector.copyThreads() + " thread(s) per chunk, streaming stores " + connector.streamingStores() + "), chunk " + config.chunkSize() + " tokens");
        return engine;
    }

    // ---- prepare ----------------------------------------------------------------------------

    /**
     * Cuts {@code tokens} into keyed chunks once, for every call of one request: pass the result to
     * {@link #lookup(PreparedRequest, String)}, {@link #prefetch(PreparedRequest, String)},
     * {@link #retrieve(PreparedRequest, PagedKvCache, long[], String)} and
     * {@link #store(PreparedRequest, PagedKvCache, long[])} instead of the tokens, and the prompt is
     * hashed once instead of once per call.
     *
     * @param requestConfigs the request's configs; {@code lmcache.tag.*} entries tag the keys
     */
    public PreparedRequest prepare(int[] tokens, Map<String, String> requestConfigs) {
        ensureOpen("prepare");
        Objects.requireNonNull(tokens, "tokens");
        return prepared(tokens, 0, requestConfigs);
    }

    /**
     * As {@link #prepare(int[], Map)}, with a mask of one entry per token of the form F…FT…T
     * (Falses a multiple of the chunk size): stores and retrieves of the result leave out the
     * {@code False} prefix, which the caller already has; lookups and prefetches see every chunk.
     *
     * @throws IllegalArgumentException for a mask of the wrong length or form
     */
    public PreparedRequest prepare(int[] tokens, boolean[] mask, Map<String, String> requestConfigs) {
        ensureOpen("prepare");
        Objects.requireNonNull(tokens, "tokens");
        checkMask(tokens, mask);
        return prepared(tokens, this.tokens.maskedPrefix(mask, tokens.length), requestConfigs);
    }

    private PreparedRequest prepared(int[] tokens, int skippedTokens, Map<String, String> requestConfigs) {
        List<ChunkRange> chunks = this.tokens.processTokens(tokens, requestConfigs);
        metrics.recordHashed(tokens.length);
        rememberFolds(chunks);
        return new PreparedRequest(this.tokens, tokens.length, chunks, skippedTokens);
    }

    /** The request prepared from {@code tokens} and the (nullable) {@code mask}: the token-array calls' first step. */
    private PreparedRequest prepareNullable(int[] tokens, boolean[] mask, Map<String, String> requestConfigs) {
        return mask == null ? prepare(tokens, requestConfigs) : prepare(tokens, mask, requestConfigs);
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
        return store(prepareNullable(tokens, mask, requestConfigs), kv, slotMapping);
    }

    /**
     * Stores the KV of a prepared request's chunks (those at or after its mask's {@code False}
     * prefix), read from {@code kv} at {@code slotMapping}.
     *
     * @return the number of tokens newly stored: chunks already cached are skipped, and when memory
     *         runs out only the chunks before that point are stored
     */
    public int store(PreparedRequest request, PagedKvCache kv, long[] slotMapping) {
        ensureOpen("store");
        checkRequest(request, kv, slotMapping);
        return storeRanges(request.chunksToProcess(), new ChunkTransfer.Paged(connector, kv, slotMapping));
    }

    /**
     * Stores the KV of a prepared request's chunks (those at or after its mask's {@code False}
     * prefix), copied out of a KV cache in its owner's layout: token {@code t} is position {@code t}.
     *
     * @return the number of tokens newly stored: chunks already cached are skipped, and when memory
     *         runs out only the chunks before that point are stored
     */
    public int store(PreparedRequest request, ExternalKvCache kv) {
        ensureOpen("store");
        checkRequest(request, kv);
        return storeRanges(request.chunksToProcess(), new ChunkTransfer.External(kv));
    }

    /**
     * Stores chunks whose hashes the caller computed (LMCache's hashes + offsets mode):
     * consecutive ranges of {@code lengths[i]} tokens starting at token 0 of {@code slotMapping}.
     */
    public int storeHashes(List<ChunkHash> hashes, int[] lengths, PagedKvCache kv, long[] slotMapping,
                           Map<String, String> requestConfigs) {
        ensureOpen("store");
        List<ChunkRange> ranges = this.tokens.processHashes(hashes, lengths, requestConfigs);
        rememberFolds(ranges);
        int total = ranges.isEmpty() ? 0 : ranges.getLast().end();
        if (slotMapping.length < total) {
            throw new IllegalArgumentException("slot mapping has " + slotMapping.length + " entries for " + total + " tokens");
        }
        checkCache(kv);
        return storeRanges(ranges, new ChunkTransfer.Paged(connector, kv, slotMapping));
    }

    private int storeRanges(List<ChunkRange> ranges, ChunkTransfer kv) {
        long started = System.nanoTime();
        List<CacheKey> keys = new ArrayList<>(ranges.size());
        List<MemoryObj> objs = new ArrayList<>(ranges.size());
        long copied = 0;
        long copyNanos = 0;
        int storedTokens = 0;
        boolean handedOff = false;
        // Which chunks are stored locally already, asked once for all of them (one CPU-tier lock
        // acquisition instead of one per chunk).
        boolean[] local = storage.containedLocally(keysOf(ranges));
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
        return retrieveChunks(prepareNullable(tokens, mask, requestConfigs), new ChunkTransfer.Paged(connector, kv, slotMapping),
                lookupId);
    }

    /**
     * Loads the longest stored prefix of a prepared request's chunks (from its mask's {@code False}
     * prefix on) into {@code kv} at {@code slotMapping}; tokens whose slot is -1 are left alone.
     *
     * @return one entry per token: true where KV was loaded
     */
    public boolean[] retrieve(PreparedRequest request, PagedKvCache kv, long[] slotMapping) {
        ensureOpen("retrieve");
        checkRequest(request, kv, slotMapping);
        return retrieveChunks(request, new ChunkTransfer.Paged(connector, kv, slotMapping), null);
    }

    /**
     * As {@link #retrieve(PreparedRequest, PagedKvCache, long[])}, then releases the pins of the
     * {@link #lookup(PreparedRequest, String)} and the chunks of the
     * {@link #prefetch(PreparedRequest, String)} that named {@code requestId}.
     */
    public boolean[] retrieve(PreparedRequest request, PagedKvCache kv, long[] slotMapping, String requestId) {
        ensureOpen("retrieve");
        checkRequest(request, kv, slotMapping);
        Objects.requireNonNull(requestId, "requestId");
        return retrieveChunks(request, new ChunkTransfer.Paged(connector, kv, slotMapping), requestId);
    }

    /**
     * Loads the longest stored prefix of a prepared request's chunks (from its mask's {@code False}
     * prefix on) into a KV cache in its owner's layout, token {@code t} at position {@code t}; then
     * releases what a {@link #lookup(PreparedRequest, String)} or {@link #prefetch(PreparedRequest, String)}
     * naming {@code requestId} holds, when {@code requestId} is not null.
     *
     * @return one entry per token: true where KV was loaded
     */
    public boolean[] retrieve(PreparedRequest request, ExternalKvCache kv, String requestId) {
        ensureOpen("retrieve");
        checkRequest(request, kv);
        return retrieveChunks(request, new ChunkTransfer.External(kv), requestId);
    }

    private boolean[] retrieveChunks(PreparedRequest request, ChunkTransfer kv, String lookupId) {
        long started = System.nanoTime();
        boolean[] loaded = new boolean[request.tokenCount()];
        List<ChunkRange> ranges = request.chunksToProcess();
        int requested = tokensIn(ranges);
        long copied = 0;
        long copyNanos = 0;
        int retrieved = 0;
        RequestPrefetch prefetched = lookupId == null ? null : prefetches.remove(lookupId);
        try {
            if (prefetched != null) {
                awaitPrefetch(prefetched, lookupId);
            }
            // One chunk at a time: a chunk read from a lower tier needs CPU memory, so holding the
            // whole prefix at once could wait for memory that only this retrieve holds.
            for (ChunkRange range : ranges) {
                Optional<MemoryObj> found = prefetched == null ? Optional.empty() : prefetched.take(range.key());
                if (found.isPresent()) {
                    retrievedPrefetchedChunks.increment();
                } else {
                    found = storage.get(range.key());
                }
                if (found.isEmpty()) {
                    break;
                }
                MemoryObj obj = found.get();
                try {
                    if (!kv.fits(obj, range.length())) {
                        LOG.log(Level.WARNING, "retrieve stops at token " + range.start() + ": stored " + obj
                                + " does not fit this cache (expected " + kv.format() + " " + kv.shape(range.length())
                                + " " + kv.dtype().torchName() + ")");
                        break;
                    }
                    long t0 = System.nanoTime();
                    copied += kv.scatter(obj, range.start(), range.end());
                    kv.finish(); // the object goes back below: its copy must be done
                    copyNanos += System.nanoTime() - t0;
                } finally {
                    obj.release();
                }
                Arrays.fill(loaded, range.start(), range.end(), true);
                retrieved += range.length();
            }
        } finally {
            if (lookupId != null) {
                lookupUnpin(lookupId);
            }
            if (prefetched != null) {
                prefetched.release();
                prefetchesConsumed.increment();
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
        return storeLayerChunks(prepareNullable(tokens, mask, requestConfigs).chunksToProcess(), kv, slotMapping);
    }

    /** As {@link #storeLayer(int[], boolean[], PagedKvCache, long[], Map)} for a prepared request. */
    public LayerwiseStore storeLayer(PreparedRequest request, PagedKvCache kv, long[] slotMapping) {
        ensureOpen("storeLayer");
        checkRequest(request, kv, slotMapping);
        return storeLayerChunks(request.chunksToProcess(), kv, slotMapping);
    }

    private LayerwiseStore storeLayerChunks(List<ChunkRange> ranges, PagedKvCache kv, long[] slotMapping) {
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
                        MemoryFormat.KV_T2D, layers, storeMode);
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
        return retrieveLayerChunks(prepareNullable(tokens, mask, requestConfigs), kv, slotMapping, lookupId);
    }

    /**
     * As {@link #retrieveLayer(int[], boolean[], PagedKvCache, long[], Map, String)} for a prepared
     * request, releasing at the end the pins of the lookup that named {@code lookupId}.
     */
    public LayerwiseRetrieve retrieveLayer(PreparedRequest request, PagedKvCache kv, long[] slotMapping, String lookupId) {
        ensureOpen("retrieveLayer");
        checkRequest(request, kv, slotMapping);
        Objects.requireNonNull(lookupId, "lookupId");
        return retrieveLayerChunks(request, kv, slotMapping, lookupId);
    }

    private LayerwiseRetrieve retrieveLayerChunks(PreparedRequest request, PagedKvCache kv, long[] slotMapping,
                                                  String lookupId) {
        long started = System.nanoTime();
        int layers = kv.layerCount();
        List<ChunkRange> ranges = request.chunksToProcess();
        int requested = tokensIn(ranges);
        List<ChunkRange> found = new ArrayList<>();
        List<List<MemoryObj>> byLayer = emptyLayers(layers);
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
        int retrievedTokens = tokensIn(found);
        return new LayerwiseRetrieve(connector, kv, slotMapping, request.tokenCount(), found, byLayer, copier(), copied -> {
            if (lookupId != null) {
                lookupUnpin(lookupId);
            }
            metrics.recordRetrieve(requested, retrievedTokens, copied, 0, System.nanoTime() - started);
        });
    }

    private static List<List<MemoryObj>> emptyLayers(int layers) {
        List<List<MemoryObj>> byLayer = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            byLayer.add(new ArrayList<>());
        }
        return byLayer;
    }

    private Executor copier() {
        ExecutorService c = layerCopier;
        if (c == null) {
            synchronized (this) {
                c = layerCopier;
                if (c == null) {
                    c = Executors.newSingleThreadExecutor(r -> {
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

    /**
     * Brings the stored prefix of {@code tokens} into the CPU tier ahead of the retrieve, from every
     * tier (each chunk from the highest tier that holds it; lower tiers load concurrently on their
     * own threads, never on the caller's). The chunks are held for {@code requestId} (so they cannot
     * be evicted before use) until {@link #retrieve} names the same id and consumes them,
     * {@link #releasePrefetch} is called, or {@code pin_timeout_sec} passes without a retrieve. A
     * chunk that is nowhere, or for which the CPU tier has no memory to spare, ends the prefix.
     *
     * @return the number of leading tokens in the CPU tier once the prefetch is done
     */
    public CompletableFuture<Integer> prefetch(int[] tokens, Map<String, String> requestConfigs, String requestId) {
        ensureOpen("prefetch");
        Objects.requireNonNull(tokens, "tokens");
        Objects.requireNonNull(requestId, "requestId");
        return prefetch(prepare(tokens, requestConfigs), requestId);
    }

    /** As {@link #prefetch(int[], Map, String)} for a prepared request (every chunk, whatever its mask). */
    public CompletableFuture<Integer> prefetch(PreparedRequest request, String requestId) {
        ensureOpen("prefetch");
        checkPrepared(request);
        Objects.requireNonNull(requestId, "requestId");
        return startPrefetch(request.chunks(), requestId);
    }

    /**
     * LMCache's {@code async_lookup_and_prefetch}, as the lookup service calls it: the request comes
     * as the scheduler hashed it (each chunk's hash folded to 64 bits, and its token count), starts
     * the prefetch of {@link #prefetch(PreparedRequest, String)} for {@code lookupId} and returns at
     * once. A folded hash this engine cannot resolve to a chunk it has hashed ends the prefix.
     * Needs {@code enable_async_loading}.
     *
     * @param foldedHashes    each chunk's hash as {@link lmcache4j.engine.controller.ControllerKeys#fold} gives it
     * @param chunkTokens     each chunk's token count (LMCache's offsets: end − start)
     * @param requestConfigs  the request's configs; {@code lmcache.tag.*} entries tag the keys
     * @return completes (never exceptionally) with the tokens ready for the retrieve: the answer the
     *         scheduler gets
     */
    public CompletableFuture<Integer> asyncLookupAndPrefetch(String lookupId, long[] foldedHashes, int[] chunkTokens,
                                                             Map<String, String> requestConfigs) {
        ensureOpen("asyncLookupAndPrefetch");
        Objects.requireNonNull(lookupId, "lookupId");
        Objects.requireNonNull(requestConfigs, "requestConfigs");
        if (this.foldedHashes == null) {
            throw new IllegalStateException("asynchronous lookups need enable_async_loading: true");
        }
        if (foldedHashes.length != chunkTokens.length) {
            throw new IllegalArgumentException(foldedHashes.length + " chunk hashes but " + chunkTokens.length
                    + " chunk token counts");
        }
        List<ChunkHash> hashes = new ArrayList<>(foldedHashes.length);
        for (long fold : foldedHashes) {
            Optional<ChunkHash> hash = this.foldedHashes.resolve(fold);
            if (hash.isEmpty()) {
                break; // never hashed here: no tier can hold it under a key this engine knows
            }
            hashes.add(hash.get());
        }
        List<ChunkRange> ranges = this.tokens.processHashes(hashes, Arrays.copyOf(chunkTokens, hashes.size()),
                requestConfigs);
        if (config.useLayerwise()) {
            // Layerwise chunks are stored per layer: answer with a pinned lookup the retrieve releases.
            int hitTokens = lookupChunks(new PreparedRequest(this.tokens, tokensIn(ranges), ranges, 0), lookupId);
            return CompletableFuture.completedFuture(hitTokens);
        }
        return startPrefetch(ranges, lookupId);
    }

    private CompletableFuture<Integer> startPrefetch(List<ChunkRange> ranges, String requestId) {
        RequestPrefetch request = new RequestPrefetch();
        RequestPrefetch previous = prefetches.put(requestId, request);
        if (previous != null) {
            previous.release();
            prefetchesCancelled.increment();
        }
        prefetchesStarted.increment();
        request.expiresWith(expiry().schedule(() -> {
            if (prefetches.remove(requestId, request)) {
                request.release();
                prefetchesExpired.increment();
            }
        }, config.pinTimeoutSec(), TimeUnit.SECONDS));
        storage.prefetch(keysOf(ranges)).whenComplete((ready, failure) -> {
            if (failure != null) { // prefetches complete normally; this is the last guard
                request.ready().complete(0);
                return;
            }
            request.hold(ready.keys(), ready.objects());
            prefetchedChunks.add(ready.chunks());
            ready.chunksByTier().forEach((tier, n) -> {
                if (!tier.equals(storage.cpu().name())) {
                    prefetchedLowerTierChunks.add(n);
                }
            });
            request.ready().complete(ready.chunks() == 0 ? 0 : ranges.get(ready.chunks() - 1).end());
        });
        return request.ready().copy();
    }

    /** Waits (up to {@code blocking_timeout_secs}) for a prefetch still loading when its retrieve comes. */
    private void awaitPrefetch(RequestPrefetch prefetched, String requestId) {
        try {
            prefetched.ready().get(config.blockingTimeoutSecs(), TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            LOG.log(Level.WARNING, "the prefetch of " + requestId + " is still loading; the retrieve goes on without it");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            // prefetches complete normally
        }
    }

    /** Releases what a {@link #prefetch} holds for {@code requestId}; does nothing if it holds nothing. */
    public void releasePrefetch(String requestId) {
        RequestPrefetch request = prefetches.remove(requestId);
        if (request != null) {
            request.release();
            prefetchesCancelled.increment();
        }
    }

    /** The prefetch counters. */
    public PrefetchStats prefetchStats() {
        return new PrefetchStats(prefetchesStarted.sum(), prefetchesConsumed.sum(), prefetchesCancelled.sum(),
                prefetchesExpired.sum(), prefetches.size(), prefetchedChunks.sum(), prefetchedLowerTierChunks.sum(),
                retrievedPrefetchedChunks.sum());
    }

    private ScheduledExecutorService expiry() {
        ScheduledExecutorService e = prefetchExpiry;
        if (e == null) {
            synchronized (this) {
                e = prefetchExpiry;
                if (e == null) {
                    ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(1, r -> {
                        Thread t = new Thread(r, "lmcache4j-prefetch-expiry-" + metadata.modelName());
                        t.setDaemon(true);
                        return t;
                    });
                    pool.setRemoveOnCancelPolicy(true);
                    e = pool;
                    prefetchExpiry = e;
                }
            }
        }
        return e;
    }

    private void rememberFolds(List<ChunkRange> ranges) {
        if (foldedHashes != null) {
            for (ChunkRange r : ranges) {
                foldedHashes.record(r.key().chunkHash());
            }
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
        return lookupChunks(prepare(tokens, requestConfigs), lookupId);
    }

    /** How many leading tokens of a prepared request are cached (every chunk, whatever its mask), as the end of the last cached chunk. */
    public int lookup(PreparedRequest request) {
        ensureOpen("lookup");
        checkPrepared(request);
        return lookupChunks(request, null);
    }

    /**
     * As {@link #lookup(PreparedRequest)}, pinning the hits until {@link #lookupUnpin} or the
     * retrieve naming {@code lookupId}; a repeated lookup with the same id replaces its pins.
     */
    public int lookup(PreparedRequest request, String lookupId) {
        ensureOpen("lookup");
        checkPrepared(request);
        Objects.requireNonNull(lookupId, "lookupId");
        return lookupChunks(request, lookupId);
    }

    private int lookupChunks(PreparedRequest request, String lookupId) {
        List<ChunkRange> ranges = request.chunks();
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
            lookupPins.put(lookupId, new LookupPin(prefix, System.nanoTime()));
            startPinMonitor();
            storage.touchCache();
        }
        int chunks = prefix.hits() / perChunk;
        int hitTokens = chunks == 0 ? 0 : ranges.get(chunks - 1).end();
        metrics.recordLookup(request.tokenCount(), hitTokens);
        return hitTokens;
    }

    /** Releases the pins of lookup {@code lookupId}; does nothing if it has none. */
    public void lookupUnpin(String lookupId) {
        LookupPin pinned = lookupPins.remove(lookupId);
        if (pinned != null) {
            storage.unpin(pinned.prefix());
        }
    }

    /** A lookup's pins and when they were taken. */
    private record LookupPin(TieredPrefix prefix, long pinnedAtNanos) {
    }

    /**
     * LMCache's pin monitor: every {@code pin_check_interval_sec}, the pins of lookups older than
     * {@code pin_timeout_sec} whose retrieve (or {@link #lookupUnpin}) never came are released, so
     * a caller that forgets a lookup cannot keep chunks unevictable for ever. A retrieve that comes
     * later still loads what is cached; only the guarantee against eviction is gone.
     */
    private void startPinMonitor() {
        if (pinMonitorStarted.compareAndSet(false, true)) {
            long every = config.pinCheckIntervalSec();
            expiry().scheduleWithFixedDelay(this::expireLookupPins, every, every, TimeUnit.SECONDS);
        }
    }

    private void expireLookupPins() {
        try {
            releaseLookupPinsOlderThan(System.nanoTime());
        } catch (RuntimeException e) { // a failed scan must not end the schedule (it would never run again)
            LOG.log(Level.WARNING, "the scan for expired lookup pins failed: " + e);
        }
    }

    private void releaseLookupPinsOlderThan(long now) {
        long timeout = TimeUnit.SECONDS.toNanos(config.pinTimeoutSec());
        int released = 0;
        for (Map.Entry<String, LookupPin> e : lookupPins.entrySet()) {
            LookupPin pin = e.getValue();
            // remove(key, value): a newer lookup with the same id keeps its own pins.
            if (now - pin.pinnedAtNanos() > timeout && lookupPins.remove(e.getKey(), pin)) {
                storage.unpin(pin.prefix());
                lookupPinsExpired.increment();
                released++;
            }
        }
        if (released > 0) {
            int n = released;
            LOG.log(Level.WARNING, () -> "released the pins of " + n + " lookup(s) older than pin_timeout_sec ("
                    + config.pinTimeoutSec() + " s) that no retrieve or lookupUnpin ended");
        }
    }

    /** Lookups whose pins were released by {@code pin_timeout_sec} because no retrieve or unpin came. */
    public long expiredLookupPins() {
        return lookupPinsExpired.sum();
    }

    // ---- maintenance ------------------------------------------------------------------------

    /** Removes every evictable chunk from every tier; returns the tokens removed. */
    public long clear() {
        ensureOpen("clear");
        return storage.clear();
    }

    /** The cache controller's worker, when {@code enable_controller} is set. */
    public Optional<ControllerWorker> controllerWorker() {
        return Optional.ofNullable(controllerWorker);
    }

    /** What the controller may do to this engine (its control messages). */
    private final class Controls implements WorkerControls {
        private final AtomicLong moves = new AtomicLong();

        @Override
        public void setResidencyListener(ResidencyListener listener) {
            storage.setResidencyListener(listener);
        }

        @Override
        public Map<String, List<CacheKey>> residentKeys() {
            return storage.residentKeys();
        }

        @Override
        public List<String> tierNames() {
            return storage.tierNames();
        }

        @Override
        public OptionalLong clear(String location) {
            return storage.tier(location).map(t -> OptionalLong.of(t.clear())).orElse(OptionalLong.empty());
        }

        @Override
        public OptionalLong pin(String location, int[] tokens) {
            Optional<StorageBackend> tier = storage.tier(location);
            if (tier.isEmpty()) {
                return OptionalLong.empty();
            }
            List<ChunkRange> ranges = prepare(tokens, Map.of()).chunks();
            int pinned = tier.get().batchedContains(keysOf(ranges), true);
            return OptionalLong.of(pinned == 0 ? 0 : ranges.get(pinned - 1).end());
        }

        @Override
        public CompletableFuture<Integer> prefetchToCpu(int[] tokens) {
            String requestId = "controller-move-" + moves.incrementAndGet();
            // The chunks stay in the CPU tier; the prefetch's own hold on them is not needed.
            return prefetch(tokens, Map.of(), requestId).whenComplete((n, e) -> releasePrefetch(requestId));
        }

        @Override
        public int health() {
            return LMCacheEngine.this.health();
        }
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
            storage.memcheck();
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
        if (controllerWorker != null) {
            controllerWorker.close(); // deregisters, before the tiers' closing removals would be reported
        }
        for (String id : List.copyOf(lookupPins.keySet())) {
            lookupUnpin(id);
        }
        List<RequestPrefetch> held = new ArrayList<>(prefetches.values());
        for (String id : List.copyOf(prefetches.keySet())) {
            releasePrefetch(id);
        }
        if (prefetchExpiry != null) {
            prefetchExpiry.shutdownNow();
            try { // a pin scan in flight finishes before the tiers close under it
                prefetchExpiry.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (layerCopier != null) {
            layerCopier.shutdown();
        }
        // Prefetches still loading hand their objects to released requests, which drop them; the
        // tiers (below) wait for them before closing, so the allocator's leak check sees none.
        held.forEach(RequestPrefetch::release);
        try {
            storage.close();
        } finally {
            connector.close();
        }
    }

    private static List<CacheKey> keysOf(List<ChunkRange> ranges) {
        List<CacheKey> keys = new ArrayList<>(ranges.size());
        for (ChunkRange r : ranges) {
            keys.add(r.key());
        }
        return keys;
    }

    private static int tokensIn(List<ChunkRange> ranges) {
        int tokens = 0;
        for (ChunkRange r : ranges) {
            tokens += r.length();
        }
        return tokens;
    }

    private void ensureOpen(String operation) {
        if (closed) {
            throw new EngineClosedException(operation);
        }
    }

    private void checkRequest(int[] tokens, boolean[] mask, PagedKvCache kv, long[] slotMapping) {
        Objects.requireNonNull(tokens, "tokens");
        Objects.requireNonNull(slotMapping, "slotMapping");
        if (mask != null) {
            checkMask(tokens, mask);
        }
        checkSlots(slotMapping, tokens.length);
        checkCache(kv);
    }

    private void checkRequest(PreparedRequest request, PagedKvCache kv, long[] slotMapping) {
        checkPrepared(request);
        Objects.requireNonNull(slotMapping, "slotMapping");
        checkSlots(slotMapping, request.tokenCount());
        checkCache(kv);
    }

    private void checkPrepared(PreparedRequest request) {
        Objects.requireNonNull(request, "request");
        if (!request.preparedBy(tokens)) {
            throw new IllegalArgumentException(request + " was prepared by another engine; prepare it with this one");
        }
    }

    private static void checkMask(int[] tokens, boolean[] mask) {
        Objects.requireNonNull(mask, "mask");
        if (mask.length != tokens.length) {
            throw new IllegalArgumentException("mask has " + mask.length + " entries for " + tokens.length + " tokens");
        }
    }

    private static void checkSlots(long[] slotMapping, int tokenCount) {
        if (slotMapping.length < tokenCount) {
            throw new IllegalArgumentException("slot mapping has " + slotMapping.length + " entries for " + tokenCount + " tokens");
        }
    }

    private void checkRequest(PreparedRequest request, ExternalKvCache kv) {
        checkPrepared(request);
        Objects.requireNonNull(kv, "kv");
        if (kv.dtype() != metadata.kvDtype() || kv.layerCount() != metadata.numLayers()
                || kv.numKvHeads() != metadata.numKvHeads() || kv.headSize() != metadata.headSize() || metadata.mla()) {
            throw new IllegalArgumentException("the KV cache (" + kv.layerCount() + " layers, " + kv.numKvHeads()
                    + " heads × " + kv.headSize() + ", " + kv.dtype().torchName() + ") does not match the model ("
                    + metadata + ")");
        }
        if (request.tokenCount() > kv.capacity()) {
            throw new IllegalArgumentException(request + " has " + request.tokenCount() + " tokens, the KV cache holds "
                    + kv.capacity() + " positions");
        }
    }

    private void checkCache(PagedKvCache kv) {
        Objects.requireNonNull(kv, "kv");
        if (kv.dtype() != metadata.kvDtype() || kv.layerCount() != metadata.numLayers()
                || kv.numKvHeads() != metadata.numKvHeads() || kv.headSize() != metadata.headSize()
                || (kv.layout() == PagedLayout.MLA) != metadata.mla()) {
            throw new IllegalArgumentException("the paged KV cache (" + kv.layerCount() + " layers, " + kv.numKvHeads()
                    + " heads × " + kv.headSize() + ", " + kv.dtype().torchName() + ", " + kv.layout()
                    + ") does not match the model (" + metadata + ")");
        }
    }
}
