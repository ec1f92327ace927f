package lmcache4j.jlama;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;

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
 * <p>One prefill at a time per instance: Jlama's forward pass already uses every core.
 */
public final class CachedPrefill implements AutoCloseable {
    /** Jlama's batch of a prefill (its {@code jlama.max_batch_size} property, 256 by default). */
    public static final int JLAMA_BATCH = Integer.getInteger("jlama.max_batch_size", 256);
    private static final AtomicLong REQUESTS = new AtomicLong();

    private final LMCacheEngine engine;
    private final AbstractModel model;
    private final KvBufferCache buffers;
    private final int alignment;

    /**
     * @param engine an engine created with {@link #metadata(AbstractModel, String) metadata(model, …)}
     * @param model  a Jlama model loaded with F32 or BF16 working memory
     */
    public CachedPrefill(LMCacheEngine engine, AbstractModel model) {
        this.engine = Objects.requireNonNull(engine, "engine");
        this.model = Objects.requireNonNull(model, "model");
        ModelMetadata expected = metadata(model, engine.metadata().modelName());
        ModelMetadata actual = engine.metadata();
        if (actual.numLayers() != expected.numLayers() || actual.numKvHeads() != expected.numKvHeads()
                || actual.headSize() != expected.headSize() || actual.kvDtype() != expected.kvDtype() || actual.mla()) {
            throw new IllegalArgumentException("the engine was made for " + actual + ", the Jlama model's KV is " + expected);
        }
        this.buffers = new KvBufferCache(model);
        this.alignment = lcm(engine.config().chunkSize(), JLAMA_BATCH);
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
        checkPrompt(tokens);
        long started = System.nanoTime();
        KvBufferCache.KvBuffer buffer = buffers.getEphemeralKvBuffer();
        try {
            JlamaKvCache kv = new JlamaKvCache(model, buffer);
            int reusable = tokens.length / alignment * alignment;
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
            Prefill result = forward(tokens, cached, buffer, kv, started, lookupNanos, retrieved);
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
            return forward(tokens, 0, buffer, new JlamaKvCache(model, buffer), started, 0, started);
        } catch (RuntimeException | Error e) {
            buffer.close();
            throw e;
        }
    }

    private Prefill forward(int[] tokens, int cached, KvBufferCache.KvBuffer buffer, JlamaKvCache kv, long started,
                            long lookupNanos, long computeStarted) {
        int[] rest = Arrays.copyOfRange(tokens, cached, tokens.length);
        AbstractTensor logits = model.makeDenseTensor(1, model.getConfig().vocabularySize);
        try (AbstractTensor hidden = model.batchForward(rest, cached, buffer)) {
            AbstractTensor last = hidden.slice(hidden.shape().first() - 1);
            int first = model.sample(last, 0f, 0f, logits);
            long firstTokenAt = System.nanoTime();
            float[] raw = new float[model.getConfig().vocabularySize];
            for (int i = 0; i < raw.length; i++) {
                raw[i] = logits.get(0, i);
            }
            return new Prefill(model, buffer, kv, tokens.length, cached, first, raw, firstTokenAt - started, lookupNanos,
                    computeStarted - started - lookupNanos, firstTokenAt - computeStarted);
        } finally {
            logits.close();
        }
    }

    private void checkPrompt(int[] tokens) {
        Objects.requireNonNull(tokens, "tokens");
        Config c = model.getConfig();
        if (tokens.length == 0 || tokens.length >= c.contextLength) {
            throw new IllegalArgumentException("a prompt has 1 to " + (c.contextLength - 1) + " tokens for this model, got "
                    + tokens.length);
        }
        for (int i = 0; i < tokens.length; i++) {
            if (tokens[i] < 0 || tokens[i] >= c.vocabularySize) {
                throw new IllegalArgumentException("token " + i + " is " + tokens[i] + ", outside the vocabulary [0, "
                        + c.vocabularySize + ")");
            }
        }
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
        int stored;
        long storeNanos;

        Prefill(AbstractModel model, KvBufferCache.KvBuffer buffer, JlamaKvCache kv, int promptTokens, int cachedTokens,
                int firstToken, float[] logits, long ttftNanos, long lookupNanos, long retrieveNanos, long computeNanos) {
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

        /**
         * Greedy-decodes {@code count} tokens after the prompt (the first token included), each fed
         * back through Jlama's forward pass at the next position. Call once.
         */
        public int[] decode(int count) {
            if (count < 1 || promptTokens + count > kv.capacity()) {
                throw new IllegalArgumentException("decode 1 to " + (kv.capacity() - promptTokens) + " tokens, not " + count);
            }
            int[] out = new int[count];
            out[0] = firstToken;
            AbstractTensor scratch = model.makeDenseTensor(1, model.getConfig().vocabularySize);
            try {
                for (int i = 1; i < count; i++) {
                    try (AbstractTensor hidden = model.forward(out[i - 1], promptTokens + i - 1, buffer, Optional.empty())) {
                        out[i] = model.sample(hidden, 0f, 0f, scratch);
                    }
                }
            } finally {
                scratch.close();
            }
            return out;
        }

        /** Gives the KV buffer's pages back to Jlama. */
        @Override
        public void close() {
            buffer.close();
        }
    }
}
