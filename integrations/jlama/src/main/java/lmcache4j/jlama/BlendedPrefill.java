package lmcache4j.jlama;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkedTokenDatabase;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.key.KeyFactory;
import lmcache4j.engine.key.SegmentTokenDatabase;
import lmcache4j.engine.key.StorageKeys;
import lmcache4j.engine.key.TokenDatabase;
import lmcache4j.engine.storage.StorageBackend;

/**
 * Jlama's prefill with CacheBlend: the KV of text that is not a prefix is reused. A prompt is split
 * at the separator ({@code blend_special_str}) into segments, each cached under a key of its own
 * tokens alone; a prefill loads every cached segment into the positions it has in this prompt
 * (keys turned by RoPE, {@link KeyRotation}), recomputes every position through the check layer
 * and only a selected share after it ({@link BlendedForward}), samples the first token, then
 * stores the segments not cached yet, keys as if computed at {@code 0…}.
 *
 * <p>A prompt without a separator is one segment: a blending engine serves it whole or not at all.
 * At a recompute ratio of 1 the output is a plain prefill's bit for bit; below 1 it is an
 * approximation whose quality depends on the model (see docs/blend.md).
 *
 * <p><b>One engine for both kinds.</b> On an engine from {@link #engine} (every request keyed by
 * segment, as LMCache does with {@code enable_blending}) the segments carry LMCache's keys, and a
 * {@link CachedPrefill} can only prefill without the cache. On an engine from {@link #sharedEngine}
 * (or any engine keyed by prefix), which a {@link CachedPrefill} uses at the same time, the
 * segments are keyed beside the prefix chunks in the same tiers and memory, with the tag {@value #SEGMENT_TAG}
 * {@code = 1} and hashes no prefix chunk can have ({@link SegmentTokenDatabase#besidePrefixes}): a
 * segment's KV was computed after other documents, so it must never be found under the key of a
 * prompt's first prefix chunk, which the same tokens would otherwise give (the tag alone would not
 * do: a prefix request's configs may carry the same tag).
 *
 * <p>One prefill at a time per instance; instances sharing a model and a forward lock take turns
 * per layer call.
 */
public final class BlendedPrefill implements AutoCloseable {
    private final LMCacheEngine engine;
    private final AbstractModel model;
    private final BlendSettings settings;
    private final KvBufferCache buffers;
    private final KeyRotation rotation;
    private final BlendedForward forward;
    private final Lock forwardLock;
    private final TokenDatabase keying;
    private final Map<String, String> keyTags;

    /** The request config that tags segment keys on an engine shared with prefix requests. */
    public static final String SEGMENT_TAG = "lmcache.tag.segment";

    /**
     * @param engine   an engine from {@link #engine(LMCacheEngineConfig, ModelMetadata, BlendSettings, List)}, or a
     *                 plain engine, shared with prefix prefills ({@link CachedPrefill})
     * @param model    a Jlama model loaded with F32 or BF16 working memory, with rotary positions
     * @param settings the blend settings ({@link BlendSettings#from})
     */
    public BlendedPrefill(LMCacheEngine engine, AbstractModel model, BlendSettings settings) {
        this(engine, model, settings, new ReentrantLock());
    }

    /** As {@link #BlendedPrefill(LMCacheEngine, AbstractModel, BlendSettings)}, each layer call under {@code forwardLock}. */
    public BlendedPrefill(LMCacheEngine engine, AbstractModel model, BlendSettings settings, Lock forwardLock) {
        this.engine = Objects.requireNonNull(engine, "engine");
        this.model = Objects.requireNonNull(model, "model");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.forwardLock = Objects.requireNonNull(forwardLock, "forwardLock");
        CachedPrefill.checkEngine(engine, model);
        int layers = model.getConfig().numberOfLayers;
        if (settings.checkLayer() >= layers) {
            throw new IllegalArgumentException("blend_check_layers: layer " + settings.checkLayer() + " is past this model's "
                    + layers + " layers");
        }
        TokenDatabase own = engine.tokenDatabase();
        if (own instanceof SegmentTokenDatabase segments) {
            if (!Arrays.equals(segments.separator(), settings.separator())) {
                throw new IllegalArgumentException("the engine splits at the separator " + Arrays.toString(segments.separator())
                        + ", the settings at " + Arrays.toString(settings.separator()));
            }
            this.keying = own;
            this.keyTags = Map.of();
        } else {
            // The tag alone does not keep the key spaces apart: a prefix request's configs can carry
            // it too. Segment hashes beside prefixes carry an extra key no prefix chunk has.
            this.keying = SegmentTokenDatabase.besidePrefixes(settings.separator(), own.hasher(), own.keyFactory(),
                    own.storageKeys());
            this.keyTags = Map.of(SEGMENT_TAG, "1");
        }
        this.rotation = KeyRotation.of(model.getConfig());
        this.forward = new BlendedForward(model, new JlamaLayers(model), forwardLock, CachedPrefill.JLAMA_BATCH);
        this.buffers = new KvBufferCache(model);
    }

    /**
     * A blending engine: keys from a {@link SegmentTokenDatabase} over {@code settings}' separator,
     * with the config's hash, seed and key form, a CPU tier of {@code max_local_cpu_size} and
     * {@code extraTiers} below it.
     */
    public static LMCacheEngine engine(LMCacheEngineConfig config, ModelMetadata metadata, BlendSettings settings,
                                       List<StorageBackend> extraTiers) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(metadata, "metadata");
        Objects.requireNonNull(settings, "settings");
        ChunkHasher hasher = ChunkHasher.of(HashAlgorithm.fromName(config.preCachingHashAlgorithm()), config.hashSeed());
        KeyFactory keys = new KeyFactory(metadata.modelName(), metadata.worldSize(), metadata.workerId(), metadata.kvDtype());
        SegmentTokenDatabase segments = new SegmentTokenDatabase(settings.separator(), hasher, keys,
                StorageKeys.fromName(config.storageChunkKeys()));
        return LMCacheEngine.create(config, metadata, KvConnector.host(1), extraTiers, segments);
    }

    /**
     * An engine for both kinds of request: prefix keys (the config's chunk size, hash, seed and key
     * form) for {@link CachedPrefill}, and segment keys, tagged {@value #SEGMENT_TAG}, for the
     * {@code BlendedPrefill}s on it; one CPU tier of {@code max_local_cpu_size} and
     * {@code extraTiers} below it hold both.
     */
    public static LMCacheEngine sharedEngine(LMCacheEngineConfig config, ModelMetadata metadata,
                                             List<StorageBackend> extraTiers) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(metadata, "metadata");
        ChunkHasher hasher = ChunkHasher.of(HashAlgorithm.fromName(config.preCachingHashAlgorithm()), config.hashSeed());
        KeyFactory keys = new KeyFactory(metadata.modelName(), metadata.worldSize(), metadata.workerId(), metadata.kvDtype());
        ChunkedTokenDatabase prefixes = new ChunkedTokenDatabase(config.chunkSize(), config.saveUnfullChunk(), hasher, keys,
                StorageKeys.fromName(config.storageChunkKeys()));
        return LMCacheEngine.create(config, metadata, KvConnector.host(1), extraTiers, prefixes);
    }

    /** The settings this instance blends with. */
    public BlendSettings settings() {
        return settings;
    }

    /**
     * The prompt's blended prefill: every cached segment loaded at its position here, the forward
     * pass, the first token; then the store of the segments not cached yet (not counted in the
     * time to first token). A prompt shorter than {@code blend_min_tokens} is prefilled whole.
     * Close the result to give its KV buffer back.
     */
    public Result prefill(int[] tokens) {
        return prefill(tokens, true);
    }

    /**
     * As {@link #prefill(int[])}; with {@code store} false nothing is stored after the first token,
     * so the prompt's new segments stay uncached (a benchmark that prefills one prompt again and
     * again, each time with its question new).
     */
    public Result prefill(int[] tokens, boolean store) {
        // Also keeps every position inside the rotary table that KeyRotation turns keys by.
        CachedPrefill.checkPrompt(model, tokens);
        long started = System.nanoTime();
        KvBufferCache.KvBuffer buffer = buffers.getEphemeralKvBuffer();
        try {
            JlamaKvCache kv = new JlamaKvCache(model, buffer);
            SegmentKvCache segments = new SegmentKvCache(kv, rotation);
            boolean[] cached = new boolean[tokens.length];
            if (tokens.length >= settings.minTokens()) {
                loadSegments(tokens, segments, cached);
            }
            // The last prompt token is always computed: it gives the first token's logits.
            cached[tokens.length - 1] = false;
            long loaded = System.nanoTime();
            BlendedForward.Outcome outcome = forward.run(tokens, cached, buffer, settings.recomputeRatio(), settings.checkLayer());
            int vocabulary = model.getConfig().vocabularySize;
            float[] raw = new float[vocabulary];
            int first;
            long firstTokenAt;
            try (AbstractTensor last = outcome.lastHidden(); AbstractTensor logits = model.makeDenseTensor(1, vocabulary)) {
                first = model.sample(last, 0f, 0f, logits);
                firstTokenAt = System.nanoTime();
                for (int i = 0; i < vocabulary; i++) {
                    raw[i] = logits.get(0, i);
                }
            }
            int reused = 0;
            for (boolean c : cached) {
                reused += c ? 1 : 0;
            }
            CachedPrefill.Prefill prefill = new CachedPrefill.Prefill(model, buffer, kv, tokens.length, reused, first, raw,
                    firstTokenAt - started, 0, loaded - started, firstTokenAt - loaded, firstTokenAt, forwardLock);
            if (store) {
                long storeStarted = System.nanoTime();
                prefill.stored = engine.store(engine.prepare(tokens, null, keyTags, keying), segments);
                prefill.storeNanos = System.nanoTime() - storeStarted;
            }
            double full = (double) tokens.length * model.getConfig().numberOfLayers;
            return new Result(prefill, outcome.recomputedTokens(), outcome.tokenLayers() / full);
        } catch (RuntimeException | Error e) {
            buffer.close();
            throw e;
        }
    }

    /**
     * Loads every cached segment of {@code tokens}, not only a leading run: the engine's retrieve
     * stops at the first segment it misses, so each retrieve starts (by the mask) at the segment
     * after the last miss.
     */
    private void loadSegments(int[] tokens, SegmentKvCache segments, boolean[] cached) {
        List<ChunkRange> ranges = engine.prepare(tokens, null, keyTags, keying).chunks();
        int i = 0;
        while (i < ranges.size()) {
            boolean[] mask = new boolean[tokens.length];
            Arrays.fill(mask, ranges.get(i).start(), tokens.length, true);
            boolean[] loaded = engine.retrieve(engine.prepare(tokens, mask, keyTags, keying), segments, null);
            while (i < ranges.size() && loaded[ranges.get(i).start()]) {
                ChunkRange r = ranges.get(i);
                Arrays.fill(cached, r.start(), r.end(), true);
                i++;
            }
            i++; // the segment the retrieve missed
        }
    }

    /** Gives back the KV buffers' pages Jlama still holds. The engine and the model stay open. */
    @Override
    public void close() {
        buffers.close();
    }

    /**
     * A blended prefill: the prefill itself (first token, logits, timings, KV to decode from), and
     * what the blend recomputed.
     *
     * @param prefill            the prefill; {@link CachedPrefill.Prefill#cachedTokens()} counts the
     *                           positions whose KV came from the cache
     * @param recomputedTokens   positions computed after the check layer (the selected cached ones
     *                           and every one not cached)
     * @param recomputedFraction the share of a full prefill's token-layers computed: every position
     *                           through the check layer, the recomputed ones after it
     */
    public record Result(CachedPrefill.Prefill prefill, int recomputedTokens, double recomputedFraction)
            implements AutoCloseable {
        /** The speedup the recomputed fraction predicts: its inverse (the linear layers' work only). */
        public double predictedSpeedup() {
            return 1 / recomputedFraction;
        }

        /** Gives the prefill's KV buffer back. */
        @Override
        public void close() {
            prefill.close();
        }
    }
}
