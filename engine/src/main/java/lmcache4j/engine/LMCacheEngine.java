package lmcache4j.engine;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.config.P2pSettings;
import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.controller.ControllerWorker;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.TokenDatabase;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.p2p.P2pBackend;
import lmcache4j.engine.p2p.PeerEngines;
import lmcache4j.engine.p2p.PeerLocator;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.StorageManager;

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

    static {
        PeerEngines.handOver(LMCacheEngine::createWithPeers); // lmcache4j's processes reach it there
    }

    private final LMCacheEngineConfig config;
    private final ModelMetadata metadata;
    private final KvConnector connector;
    private final TokenDatabase tokens;
    private final StorageManager storage;
    private final EngineMetrics metrics;
    private final AllocationMode storeMode;
    private final EngineThreads threads;
    private final LookupPins lookupPins;
    private final Prefetches prefetches;
    private final RequestChecks checks;
    private final ChunkCopies copies;
    private final Lookups lookups;
    private final RequestPreparer preparer;
    private final EngineControlPlane controlPlane = new EngineControlPlane();
    private volatile boolean closed;

    private LMCacheEngine(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                          TokenDatabase tokens, ControllerKeys.Index controllerKeys, StorageManager storage) {
        this.config = config;
        this.metadata = metadata;
        this.connector = connector;
        this.tokens = tokens;
        this.storage = storage;
        this.metrics = new EngineMetrics(metadata.modelName(), metadata.workerId());
        this.storeMode = config.storeWaitsForMemory() ? AllocationMode.EVICT_AND_WAIT : AllocationMode.EVICT;
        this.threads = new EngineThreads(metadata.modelName());
        this.lookupPins = new LookupPins(storage, config, threads);
        this.prefetches = new Prefetches(storage, config, threads);
        this.checks = new RequestChecks(metadata, tokens);
        this.lookups = new Lookups(config, metadata, tokens, storage, metrics, lookupPins, prefetches,
                controllerKeys);
        this.preparer = new RequestPreparer(tokens, metrics, lookups, controlPlane);
        this.copies = new ChunkCopies(storage, metrics, storeMode, config.storeLocation(), prefetches, lookupPins);
        storage.publishMetrics(metrics);
        EngineAssembly.bindCopyMetrics(metrics, connector);
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
        return create(config, metadata, connector, extraTiers, EngineAssembly.tokenDatabase(config, metadata));
    }

    /** As {@link #create(LMCacheEngineConfig, ModelMetadata, KvConnector, List)} with a given token database. */
    public static LMCacheEngine create(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                                       List<StorageBackend> extraTiers, TokenDatabase tokenDatabase) {
        ControllerKeys.Index keys = EngineAssembly.controllerKeys(config);
        return create(config, metadata, connector, extraTiers, tokenDatabase, keys,
                EngineTiers.controllerP2pTier(config, metadata, keys));
    }

    /**
     * {@link PeerEngines#create}: an engine with {@code enable_p2p} whose P2P tier ({@link P2pBackend})
     * asks {@code locator} which peer holds a chunk this engine misses and fetches it from that peer's
     * transfer server. Serving this engine's tiers to peers is the server module's {@code P2pTransferServer}.
     *
     * @param instanceId this instance's {@code lmcache_instance_id}, never fetched from
     * @throws IllegalArgumentException when the config does not enable P2P or lacks its settings
     */
    private static LMCacheEngine createWithPeers(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                                                PeerLocator locator, String instanceId) {
        P2pSettings p2p = config.p2p().orElseThrow(() -> new IllegalArgumentException(
                "an engine with peers needs enable_p2p (with p2p_host and p2p_init_ports) in the config"));
        Objects.requireNonNull(locator, "locator");
        Objects.requireNonNull(instanceId, "instanceId");
        return create(config, metadata, connector, List.of(), EngineAssembly.tokenDatabase(config, metadata),
                EngineAssembly.controllerKeys(config), EngineTiers.p2pTier(config, p2p, locator, instanceId));
    }

    private static LMCacheEngine create(LMCacheEngineConfig config, ModelMetadata metadata, KvConnector connector,
                                        List<StorageBackend> extraTiers, TokenDatabase tokenDatabase,
                                        ControllerKeys.Index keys, Optional<Function<MemoryProvider, StorageBackend>> lowest) {
        LMCacheEngine engine = new LMCacheEngine(config, metadata, connector, tokenDatabase, keys,
                EngineTiers.open(config, metadata, extraTiers, lowest));
        try {
            engine.controlPlane.start(engine, engine.lookups);
        } catch (RuntimeException e) {
            engine.close();
            throw e;
        }
        LOG.log(Level.INFO, () -> EngineAssembly.describe(engine));
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
        return preparer.prepare(tokens, null, requestConfigs);
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
        RequestChecks.checkMask(tokens, mask);
        return preparer.prepare(tokens, mask, requestConfigs);
    }

    /**
     * As {@link #prepare(int[], boolean[], Map)}, keyed by {@code keying} instead of this engine's own
     * database: how one engine serves prefix-cached requests (its own database) and blended ones (a
     * {@link lmcache4j.engine.key.SegmentTokenDatabase}) from the same tiers and memory. The caller
     * chooses the keying per request; nothing is guessed from the tokens. The chunks of such a
     * request are not reported to the control plane (controller, KV events), which speaks of vLLM's
     * prefix blocks.
     *
     * @param mask   null, or one entry per token of the form F…FT…T (as {@code keying} allows)
     * @param keying a database whose keys name this engine's model, world size, worker, KV dtype and
     *               key form
     * @throws IllegalArgumentException when {@code keying}'s keys would name another engine's chunks,
     *                                  or for a mask {@code keying} refuses
     */
    public PreparedRequest prepare(int[] tokens, boolean[] mask, Map<String, String> requestConfigs, TokenDatabase keying) {
        ensureOpen("prepare");
        Objects.requireNonNull(tokens, "tokens");
        Objects.requireNonNull(keying, "keying");
        if (keying == this.tokens) {
            return mask == null ? prepare(tokens, requestConfigs) : prepare(tokens, mask, requestConfigs);
        }
        if (!keying.keyFactory().equals(this.tokens.keyFactory()) || keying.storageKeys() != this.tokens.storageKeys()) {
            throw new IllegalArgumentException("the keying database's keys (" + keying.keyFactory() + ", "
                    + keying.storageKeys() + ") differ from this engine's (" + this.tokens.keyFactory() + ", "
                    + this.tokens.storageKeys() + "); build it from the engine's tokenDatabase()");
        }
        if (mask != null) {
            RequestChecks.checkMask(tokens, mask);
        }
        return preparer.prepareKeyedBy(keying, tokens, mask, requestConfigs);
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
        checks.check(tokens, mask, kv, slotMapping);
        return store(preparer.prepare(tokens, mask, requestConfigs), kv, slotMapping);
    }

    /** As {@link #store(int[], boolean[], PagedKvCache, long[], Map)} for a prepared request. */
    public int store(PreparedRequest request, PagedKvCache kv, long[] slotMapping) {
        ensureOpen("store");
        checks.check(request, kv, slotMapping);
        return copies.store(request.chunksToProcess(), new ChunkTransfer.Paged(connector, kv, slotMapping));
    }

    /**
     * As {@link #store(PreparedRequest, PagedKvCache, long[])}, copying out of a KV cache in its
     * owner's layout: token {@code t} is position {@code t}.
     */
    public int store(PreparedRequest request, ExternalKvCache kv) {
        ensureOpen("store");
        checks.check(request, kv);
        return copies.store(request.chunksToProcess(), new ChunkTransfer.External(kv));
    }

    /**
     * Stores chunks whose hashes the caller computed (LMCache's hashes + offsets mode):
     * consecutive ranges of {@code lengths[i]} tokens starting at token 0 of {@code slotMapping}.
     */
    public int storeHashes(List<ChunkHash> hashes, int[] lengths, PagedKvCache kv, long[] slotMapping,
                           Map<String, String> requestConfigs) {
        ensureOpen("store");
        return store(preparer.fromHashes(hashes, lengths, requestConfigs), kv, slotMapping);
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
        checks.check(tokens, mask, kv, slotMapping);
        return copies.retrieve(preparer.prepare(tokens, mask, requestConfigs), new ChunkTransfer.Paged(connector, kv, slotMapping),
                lookupId);
    }

    /** As {@link #retrieve(int[], boolean[], PagedKvCache, long[], Map, String)} for a prepared request. */
    public boolean[] retrieve(PreparedRequest request, PagedKvCache kv, long[] slotMapping) {
        ensureOpen("retrieve");
        checks.check(request, kv, slotMapping);
        return copies.retrieve(request, new ChunkTransfer.Paged(connector, kv, slotMapping), null);
    }

    /**
     * As {@link #retrieve(PreparedRequest, PagedKvCache, long[])}, then releases the pins of the
     * {@link #lookup(PreparedRequest, String)} and the chunks of the
     * {@link #prefetch(PreparedRequest, String)} that named {@code requestId}.
     */
    public boolean[] retrieve(PreparedRequest request, PagedKvCache kv, long[] slotMapping, String requestId) {
        ensureOpen("retrieve");
        checks.check(request, kv, slotMapping);
        Objects.requireNonNull(requestId, "requestId");
        return copies.retrieve(request, new ChunkTransfer.Paged(connector, kv, slotMapping), requestId);
    }

    /**
     * As {@link #retrieve(PreparedRequest, PagedKvCache, long[], String)} into a KV cache in its
     * owner's layout (token {@code t} at position {@code t}); {@code requestId} may be null.
     */
    public boolean[] retrieve(PreparedRequest request, ExternalKvCache kv, String requestId) {
        ensureOpen("retrieve");
        checks.check(request, kv);
        return copies.retrieve(request, new ChunkTransfer.External(kv), requestId);
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
        checks.check(tokens, mask, kv, slotMapping);
        return LayerwiseStore.start(storage, connector, kv, slotMapping, preparer.prepare(tokens, mask, requestConfigs)
                .chunksToProcess(), storeMode, threads.layerCopier(), metrics);
    }

    /** As {@link #storeLayer(int[], boolean[], PagedKvCache, long[], Map)} for a prepared request. */
    public LayerwiseStore storeLayer(PreparedRequest request, PagedKvCache kv, long[] slotMapping) {
        ensureOpen("storeLayer");
        checks.check(request, kv, slotMapping);
        return LayerwiseStore.start(storage, connector, kv, slotMapping, request.chunksToProcess(), storeMode,
                threads.layerCopier(), metrics);
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
        checks.check(tokens, mask, kv, slotMapping);
        return LayerwiseRetrieve.start(storage, connector, kv, slotMapping, preparer.prepare(tokens, mask, requestConfigs),
                threads.layerCopier(), metrics, lookupPins, lookupId);
    }

    /**
     * As {@link #retrieveLayer(int[], boolean[], PagedKvCache, long[], Map, String)} for a prepared
     * request, releasing at the end the pins of the lookup that named {@code lookupId}.
     */
    public LayerwiseRetrieve retrieveLayer(PreparedRequest request, PagedKvCache kv, long[] slotMapping, String lookupId) {
        ensureOpen("retrieveLayer");
        checks.check(request, kv, slotMapping);
        Objects.requireNonNull(lookupId, "lookupId");
        return LayerwiseRetrieve.start(storage, connector, kv, slotMapping, request, threads.layerCopier(), metrics,
                lookupPins, lookupId);
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
        checks.check(request);
        Objects.requireNonNull(requestId, "requestId");
        return prefetches.start(request.chunks(), requestId);
    }

    /**
     * LMCache's {@code async_lookup_and_prefetch}, as the lookup service calls it: the request comes
     * as the scheduler keyed it (each chunk's controller key, and its token count), starts the
     * prefetch of {@link #prefetch(PreparedRequest, String)} for {@code lookupId} and returns at
     * once. A key this engine cannot resolve to a chunk it has keyed ends the prefix.
     * Needs {@code enable_async_loading}.
     *
     * @param foldedHashes    each chunk's key as {@link lmcache4j.engine.controller.ControllerKeys} makes it
     * @param chunkTokens     each chunk's token count (LMCache's offsets: end − start)
     * @param requestConfigs  the request's configs; {@code lmcache.tag.*} entries tag the keys
     * @return completes (never exceptionally) with the tokens ready for the retrieve: the answer the
     *         scheduler gets
     */
    public CompletableFuture<Integer> asyncLookupAndPrefetch(String lookupId, long[] foldedHashes, int[] chunkTokens,
                                                             Map<String, String> requestConfigs) {
        ensureOpen("asyncLookupAndPrefetch");
        return lookups.asyncLookupAndPrefetch(lookupId, foldedHashes, chunkTokens, requestConfigs);
    }

    /** Releases what a {@link #prefetch} holds for {@code requestId}; does nothing if it holds nothing. */
    public void releasePrefetch(String requestId) {
        prefetches.release(requestId);
    }

    /** The prefetch counters. */
    public PrefetchStats prefetchStats() {
        return prefetches.stats();
    }

    // ---- lookup -----------------------------------------------------------------------------

    /**
     * How many leading tokens are cached, as the end of the last cached chunk. With
     * {@code lookupId}, the hits are pinned until {@link #lookupUnpin} or the retrieve naming it.
     */
    public int lookup(int[] tokens, Map<String, String> requestConfigs, String lookupId) {
        ensureOpen("lookup");
        Objects.requireNonNull(tokens, "tokens");
        return lookups.lookup(prepare(tokens, requestConfigs), lookupId);
    }

    /** How many leading tokens of a prepared request are cached (every chunk, whatever its mask), as the end of the last cached chunk. */
    public int lookup(PreparedRequest request) {
        ensureOpen("lookup");
        checks.check(request);
        return lookups.lookup(request, null);
    }

    /**
     * As {@link #lookup(PreparedRequest)}, pinning the hits until {@link #lookupUnpin} or the
     * retrieve naming {@code lookupId}; a repeated lookup with the same id replaces its pins.
     */
    public int lookup(PreparedRequest request, String lookupId) {
        ensureOpen("lookup");
        checks.check(request);
        Objects.requireNonNull(lookupId, "lookupId");
        return lookups.lookup(request, lookupId);
    }

    /** Releases the pins of lookup {@code lookupId}; does nothing if it has none. */
    public void lookupUnpin(String lookupId) {
        lookupPins.release(lookupId);
    }

    /**
     * Lookups whose pins LMCache's pin monitor released: older than {@code pin_timeout_sec} (checked
     * every {@code pin_check_interval_sec}) with no retrieve or unpin.
     */
    public long expiredLookupPins() {
        return lookupPins.expired();
    }

    // ---- maintenance ------------------------------------------------------------------------

    /** Removes every evictable chunk from every tier; returns the tokens removed. */
    public long clear() {
        ensureOpen("clear");
        long removed = storage.clear();
        controlPlane.cleared(this);
        return removed;
    }

    /** The cache controller's worker, when {@code enable_controller} is set. */
    public Optional<ControllerWorker> controllerWorker() {
        return controlPlane.worker();
    }

    /** The engine's metrics. */
    public EngineMetrics metrics() {
        return metrics;
    }

    /** The tiers. */
    public StorageManager storage() {
        return storage;
    }

    /**
     * The token database this engine keys requests with by default: prefix chunks, or segments for
     * an engine made to blend. Its hasher, key factory and key form build another keying for
     * {@link #prepare(int[], boolean[], Map, TokenDatabase)}.
     */
    public TokenDatabase tokenDatabase() {
        return tokens;
    }

    /** The effective configuration. */
    public LMCacheEngineConfig config() {
        return config;
    }

    public ModelMetadata metadata() {
        return metadata;
    }

    KvConnector connector() {
        return connector;
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
        controlPlane.close();
        lookupPins.releaseAll();
        List<RequestPrefetch> held = prefetches.releaseAll();
        threads.close(); // a pin scan in flight finishes before the tiers close under it
        // Prefetches still loading hand their objects to released requests, which drop them; the
        // tiers (below) wait for them before closing, so the allocator's leak check sees none.
        held.forEach(RequestPrefetch::release);
        try {
            storage.close();
        } finally {
            connector.close();
        }
    }

    private void ensureOpen(String operation) {
        if (closed) {
            throw new EngineClosedException(operation);
        }
    }
}
