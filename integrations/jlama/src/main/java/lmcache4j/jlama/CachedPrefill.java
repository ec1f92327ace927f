package lmcache4j.jlama;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.key.SegmentTokenDatabase;
import lmcache4j.engine.pd.PdTransfer;

/**
 * Jlama's prefill with lmcache4j under it: {@link #prefill(int[])} looks up the longest cached
 * prefix of the prompt, retrieves it into a fresh Jlama KV buffer, runs Jlama's
 * {@code batchForward} on the rest only, samples the first token, and then stores the prompt's KV
 * for the next request. {@link #prefillWithoutCache(int[])} is plain Jlama, the baseline.
 *
 * <p><b>Same outputs.</b> The reused prefix ends on a multiple of both the chunk size and Jlama's
 * batch ({@code jlama.max_batch_size}, 256), and the last prompt token is always computed. So the
 * tokens computed warm fall into the very batches a cold prefill computes them in, over the same
 * KV bytes, and the logits are the cold path's bit for bit (once the JIT has compiled Jlama's
 * kernels; see docs/jlama.md).
 *
 * <p><b>Disaggregated prefill.</b> {@link #prefill(int[], PdTransfer)} is a prefiller's prefill:
 * it computes the prompt one Jlama batch (256 positions, a chunk) at a time and hands each chunk to
 * the push as soon as its batch is done, so the transfer runs behind the compute. With
 * {@code save_unfull_chunk} (which {@code enable_pd} sets) a decoder's {@link #prefill(int[])} reuses
 * the prompt's last, partial chunk too, and computes only the last position.
 *
 * <p>One prefill at a time per instance: Jlama's forward pass already uses every core. Instances
 * that share a model and a {@linkplain #CachedPrefill(LMCacheEngine, AbstractModel, Lock) forward
 * lock} take turns per forward call (a prefill batch or a decode step), as a serving engine
 * interleaves them.
 */
public final class CachedPrefill implements AutoCloseable {
    /** Jlama's batch of a prefill (its {@code jlama.max_batch_size} property, 256 by default). */
    public static final int JLAMA_BATCH = Integer.getInteger("jlama.max_batch_size", 256);
    private static final AtomicLong REQUESTS = new AtomicLong();

    private final LMCacheEngine engine;
    private final AbstractModel model;
    private final KvBufferCache buffers;
    private final int alignment;
    private final boolean partialChunks;
    private final Lock forwardLock;

    /**
     * @param engine an engine created with {@link #metadata(AbstractModel, String) metadata(model, …)}
     * @param model  a Jlama model loaded with F32 or BF16 working memory
     */
    public CachedPrefill(LMCacheEngine engine, AbstractModel model) {
        this(engine, model, new ReentrantLock());
    }

    /**
     * As {@link #CachedPrefill(LMCacheEngine, AbstractModel)}, every forward call (a prefill batch, a
     * decode step) taken under {@code forwardLock}: instances sharing a model and the lock interleave
     * their batches and steps instead of running them on the same cores at once.
     */
    public CachedPrefill(LMCacheEngine engine, AbstractModel model, Lock forwardLock) {
        this.engine = Objects.requireNonNull(engine, "engine");
        this.model = Objects.requireNonNull(model, "model");
        this.forwardLock = Objects.requireNonNull(forwardLock, "forwardLock");
        checkEngine(engine, model);
        this.buffers = new KvBufferCache(model);
        this.alignment = lcm(engine.config().chunkSize(), JLAMA_BATCH);
        this.partialChunks = engine.config().saveUnfullChunk();
    }

    /** Refuses an engine made for another model's KV shape. */
    static void checkEngine(LMCacheEngine engine, AbstractModel model) {
        ModelMetadata expected = metadata(model, engine.metadata().modelName());
        ModelMetadata actual = engine.metadata();
        if (actual.numLayers() != expected.numLayers() || actual.numKvHeads() != expected.numKvHeads()
                || actual.headSize() != expected.headSize() || actual.kvDtype() != expected.kvDtype() || actual.mla()) {
            throw new IllegalArgumentException("the engine was made for " + actual + ", the Jlama model's KV is " + expected);
        }
    }

    /**
     * What the engine must know of a Jlama model: its layers, KV heads, head size and KV dtype, for
     * one worker.
     *
     * @param modelName the name keys carry: the same model must have the same name in every process
     */
    public static ModelMetadata metadata(AbstractModel model, String modelName) {
        Config c = model.getConfig();
        return new ModelMetadata(modelName, 1, 0, JlamaKvCache.dtypeOf(model), c.numberOfLayers, c.numberOfKeyValueHeads,
                c.headSize, false);
    }

    /** The model. */
    public AbstractModel model() {
        return model;
    }

    /**
     * The prompt's prefill with the cache: lookup, retrieve of the reusable prefix, forward pass on
     * the rest, first token; then the store of the prompt's KV (not counted in
     * {@link Prefill#timeToFirstTokenNanos()}). Close the result to give its KV buffer back.
     */
    public Prefill prefill(int[] tokens) {
        return prefill(tokens, Optional.empty());
    }

    /**
     * A prefiller's prefill: as {@link #prefill(int[])}, computing the prompt one Jlama batch at a
     * time and giving each chunk to {@code push} as soon as its batch is computed (a cached prefix at
     * once); once the first token is sampled the push is finished (the proxy told) before the prompt's
     * KV is stored here. {@link Prefill#pushResult()} says what was pushed.
     */
    public Prefill prefill(int[] tokens, PdTransfer push) {
        return prefill(tokens, Optional.of(Objects.requireNonNull(push, "push")));
    }

    private Prefill prefill(int[] tokens, Optional<PdTransfer> push) {
        checkPrompt(tokens);
        if (engine.tokenDatabase() instanceof SegmentTokenDatabase) {
            // Segment keys are position-free: a segment retrieved as a prefix chunk lands unrotated.
            throw new IllegalArgumentException("this engine keys every request by segment (BlendedPrefill.engine), and a "
                    + "prefix prefill needs prefix keys; use BlendedPrefill.sharedEngine, which serves both");
        }
        long started = System.nanoTime();
        KvBufferCache.KvBuffer buffer = buffers.getEphemeralKvBuffer();
        try {
            JlamaKvCache kv = new JlamaKvCache(model, buffer);
            // With save_unfull_chunk the last, partial chunk has a key too: a prompt whose every chunk
            // was pushed (or cached) is found whole, and only its last position is computed.
            int reusable = partialChunks ? tokens.length : tokens.length / alignment * alignment;
            int cached = 0;
            long lookupNanos = 0;
            if (reusable > 0) {
                String id = "jlama-" + REQUESTS.incrementAndGet();
                PreparedRequest request = engine.prepare(Arrays.copyOf(tokens, reusable), Map.of());
                int found = engine.lookup(request, id);
                lookupNanos = System.nanoTime() - started;
                if (found > 0) {
                    boolean[] loaded = engine.retrieve(request, kv, id);
                    int prefix = loadedPrefix(loaded);
                    // The last prompt token is always computed: it gives the first token's logits.
                    cached = prefix == tokens.length ? tokens.length - 1 : prefix / alignment * alignment;
                } else {
                    engine.lookupUnpin(id);
                }
            }
            long retrieved = System.nanoTime();
            Prefill result = forward(tokens, cached, buffer, kv, started, lookupNanos, retrieved, push);
            push.ifPresent(p -> result.pushResult = Optional.of(p.finish()));
            long storeStarted = System.nanoTime();
            result.stored = engine.store(engine.prepare(tokens, Map.of()), kv);
            result.storeNanos = System.nanoTime() - storeStarted;
            return result;
        } catch (RuntimeException | Error e) {
            buffer.close();
            throw e;
        }
    }

    /** Plain Jlama: the whole prompt through the forward pass, no lookup, no store. The baseline. */
    public Prefill prefillWithoutCache(int[] tokens) {
        checkPrompt(tokens);
        long started = System.nanoTime();
        KvBufferCache.KvBuffer buffer = buffers.getEphemeralKvBuffer();
        try {
            return forward(tokens, 0, buffer, new JlamaKvCache(model, buffer), started, 0, started, Optional.empty());
        } catch (RuntimeException | Error e) {
            buffer.close();
            throw e;
        }
    }

    /**
     * Jlama's forward pass over positions {@code [cached, tokens.length)}, one batch of
     * {@link #JLAMA_BATCH} positions per call, as Jlama's own {@code batchForward} splits it (so the
     * result is the same bit for bit), each call under the forward lock; with a push, each chunk goes
     * to it as soon as its batch is computed.
     */
    private Prefill forward(int[] tokens, int cached, KvBufferCache.KvBuffer buffer, JlamaKvCache kv, long started,
                            long lookupNanos, long computeStarted, Optional<PdTransfer> push) {
        AbstractTensor logits = model.makeDenseTensor(1, model.getConfig().vocabularySize);
        AbstractTensor hidden = null;
        try {
            push.ifPresent(p -> p.pushComputed(kv, cached));
            for (int at = cached; at < tokens.length; at += JLAMA_BATCH) {
                int end = Math.min(tokens.length, at + JLAMA_BATCH);
                if (hidden != null) {
                    hidden.close();
                    hidden = null; // given back: the finally below must not give it back again if this batch fails
                }
                forwardLock.lock();
                try {
                    hidden = model.batchForward(Arrays.copyOfRange(tokens, at, end), at, buffer);
                } finally {
                    forwardLock.unlock();
                }
                int computed = end;
                push.ifPresent(p -> p.pushComputed(kv, computed));
            }
            AbstractTensor last = hidden.slice(hidden.shape().first() - 1);
            int first = model.sample(last, 0f, 0f, logits);
            long firstTokenAt = System.nanoTime();
            float[] raw = new float[model.getConfig().vocabularySize];
            for (int i = 0; i < raw.length; i++) {
                raw[i] = logits.get(0, i);
            }
            return new Prefill(model, buffer, kv, tokens.length, cached, first, raw, firstTokenAt - started, lookupNanos,
                    computeStarted - started - lookupNanos, firstTokenAt - computeStarted, firstTokenAt, forwardLock);
        } finally {
            if (hidden != null) {
                hidden.close();
            }
            logits.close();
        }
    }

    private void checkPrompt(int[] tokens) {
        checkPrompt(model, tokens);
    }

    /**
     * Refuses an empty prompt, one longer than {@link #longestPrompt the model allows}, and tokens
     * outside its vocabulary.
     */
    static void checkPrompt(AbstractModel model, int[] tokens) {
        Objects.requireNonNull(tokens, "tokens");
        Config c = model.getConfig();
        int longest = longestPrompt(c);
        if (tokens.length == 0 || tokens.length > longest) {
            throw new IllegalArgumentException("a prompt has 1 to " + longest + " tokens for this model, got " + tokens.length
                    + " (" + limitReason(c) + ")");
        }
        for (int i = 0; i < tokens.length; i++) {
            if (tokens[i] < 0 || tokens[i] >= c.vocabularySize) {
                throw new IllegalArgumentException("token " + i + " is " + tokens[i] + ", outside the vocabulary [0, "
                        + c.vocabularySize + ")");
            }
        }
    }

    /**
     * The longest prompt Jlama 0.8.4 can prefill on this model: one position short of its context,
     * and no position past the last its rotary table covers for every KV head. Jlama reads that table
     * a little past a position for each KV head after the first ({@link KeyRotation#lastPosition(int,
     * int, int)}), so a model with more than one KV head fails inside Jlama (an
     * ArrayIndexOutOfBoundsException) at the last 2·(KV heads − 1) positions of its context.
     */
    static int longestPrompt(Config c) {
        int belowContext = c.contextLength - 1;
        return c.ropeFreqs.map(table -> Math.min(belowContext,
                KeyRotation.lastPosition(table.length, c.headSize, c.numberOfKeyValueHeads) + 1)).orElse(belowContext);
    }

    private static String limitReason(Config c) {
        return c.ropeFreqs.map(table -> "its context is " + c.contextLength + " positions, and Jlama's rotary table covers "
                + "positions 0 to " + KeyRotation.lastPosition(table.length, c.headSize, c.numberOfKeyValueHeads)
                + " for its " + c.numberOfKeyValueHeads + " KV heads").orElse("its context is " + c.contextLength + " positions");
    }

    private static int loadedPrefix(boolean[] loaded) {
        int n = 0;
        while (n < loaded.length && loaded[n]) {
            n++;
        }
        return n;
    }

    private static int lcm(int a, int b) {
        int x = a;
        int y = b;
        while (y != 0) {
            int t = x % y;
            x = y;
            y = t;
        }
        return a / x * b;
    }

    /** Gives back the KV buffers' pages Jlama still holds. The engine and the model stay open. */
    @Override
    public void close() {
        buffers.close();
    }

    /**
     * One prompt after its prefill: the first token (greedy), the last position's logits, what came
     * from the cache, the timings, and the KV buffer (decode more tokens with {@link #decode(int)}).
     */
    public static final class Prefill implements AutoCloseable {
        private final AbstractModel model;
        private final KvBufferCache.KvBuffer buffer;
        private final JlamaKvCache kv;
        private final int promptTokens;
        private final int cachedTokens;
        private final int firstToken;
        private final float[] logits;
        private final long ttftNanos;
        private final long lookupNanos;
        private final long retrieveNanos;
        private final long computeNanos;
        private final long firstTokenAt;
        private final Lock forwardLock;
        private long[] tokenTimes = new long[0];
        int stored;
        long storeNanos;
        Optional<PdTransfer.Result> pushResult = Optional.empty();

        Prefill(AbstractModel model, KvBufferCache.KvBuffer buffer, JlamaKvCache kv, int promptTokens, int cachedTokens,
                int firstToken, float[] logits, long ttftNanos, long lookupNanos, long retrieveNanos, long computeNanos,
                long firstTokenAt, Lock forwardLock) {
            this.model = model;
            this.buffer = buffer;
            this.kv = kv;
            this.promptTokens = promptTokens;
            this.cachedTokens = cachedTokens;
            this.firstToken = firstToken;
            this.logits = logits;
            this.ttftNanos = ttftNanos;
            this.lookupNanos = lookupNanos;
            this.retrieveNanos = retrieveNanos;
            this.computeNanos = computeNanos;
            this.firstTokenAt = firstTokenAt;
            this.forwardLock = forwardLock;
        }

        /** The prompt's length. */
        public int promptTokens() {
            return promptTokens;
        }

        /** Prompt tokens whose KV came from the cache. */
        public int cachedTokens() {
            return cachedTokens;
        }

        /** Prompt tokens the forward pass computed. */
        public int computedTokens() {
            return promptTokens - cachedTokens;
        }

        /** The greedy first token. */
        public int firstToken() {
            return firstToken;
        }

        /** The last prompt position's raw logits (a copy). */
        public float[] logits() {
            return logits.clone();
        }

        /** From the call to the first token: lookup, retrieve, forward pass, sampling. */
        public long timeToFirstTokenNanos() {
            return ttftNanos;
        }

        /** The lookup's share of {@link #timeToFirstTokenNanos()}. */
        public long lookupNanos() {
            return lookupNanos;
        }

        /** The retrieve's share of {@link #timeToFirstTokenNanos()}. */
        public long retrieveNanos() {
            return retrieveNanos;
        }

        /** The forward pass's and sampling's share of {@link #timeToFirstTokenNanos()}. */
        public long computeNanos() {
            return computeNanos;
        }

        /** Tokens the store after the prefill added to the cache (0 without the cache, or when all was cached). */
        public int storedTokens() {
            return stored;
        }

        /** How long the store after the prefill took (after the first token). */
        public long storeNanos() {
            return storeNanos;
        }

        /** The KV buffer as the engine sees it. */
        public JlamaKvCache kv() {
            return kv;
        }

        /** What the push of a prefiller's prefill did; empty for any other prefill. */
        public Optional<PdTransfer.Result> pushResult() {
            return pushResult;
        }

        /**
         * When each token of the last {@link #decode(int)} was sampled ({@link System#nanoTime()}), the
         * first token's at index 0: the inter-token latencies are the differences.
         */
        public long[] tokenTimesNanos() {
            return tokenTimes.clone();
        }

        /**
         * Greedy-decodes {@code count} tokens after the prompt (the first token included), each fed
         * back through Jlama's forward pass at the next position. Call once.
         */
        public int[] decode(int count) {
            // The last token sampled is never fed back: the positions fed end at promptTokens + count - 2,
            // which may be the last position of the longest prompt, no further.
            int room = longestPrompt(model.getConfig()) + 1 - promptTokens;
            if (count < 1 || count > room) {
                throw new IllegalArgumentException("decode 1 to " + room + " tokens, not " + count);
            }
            int[] out = new int[count];
            long[] times = new long[count];
            out[0] = firstToken;
            times[0] = firstTokenAt;
            AbstractTensor scratch = model.makeDenseTensor(1, model.getConfig().vocabularySize);
            try {
                for (int i = 1; i < count; i++) {
                    forwardLock.lock();
                    try (AbstractTensor hidden = model.forward(out[i - 1], promptTokens + i - 1, buffer, Optional.empty())) {
                        out[i] = model.sample(hidden, 0f, 0f, scratch);
                    } finally {
                        forwardLock.unlock();
                    }
                    times[i] = System.nanoTime();
                }
            } finally {
                scratch.close();
            }
            tokenTimes = times;
            return out;
        }

        /** Gives the KV buffer's pages back to Jlama. */
        @Override
        public void close() {
            buffer.close();
        }
    }
}
