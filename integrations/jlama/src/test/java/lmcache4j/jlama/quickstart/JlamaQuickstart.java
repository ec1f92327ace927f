package lmcache4j.jlama.quickstart;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.jlama.CachedPrefill;
import lmcache4j.jlama.SyntheticLlama;

/** A Jlama application whose prefills reuse cached KV: the second prompt shares the first one's 1,024 tokens. */
public final class JlamaQuickstart {
    /** What the second prefill did: prompt tokens, tokens whose KV came from the cache, and its first token. */
    public record Result(int promptTokens, int cachedTokens, int firstToken) {
    }

    /** {@code [MODEL_DIR]}: a Hugging Face model directory; without one, a small synthetic Llama written to ./synthetic-llama. */
    public static void main(String[] args) throws IOException {
        Path modelDir = args.length > 0 ? Path.of(args[0]) : SyntheticLlama.tiny().writeTo(Path.of("synthetic-llama"));
        // Token ids 3..1014: inside the synthetic model's vocabulary (1,015 tokens) and any larger one.
        Random random = new Random(4);
        int[] document = random.ints(1_024, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        int[] question = random.ints(40, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        System.out.println(run(modelDir, document, question));
    }

    public static Result run(Path modelDir, int[] document, int[] question) {
        AbstractModel model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        try (LMCacheEngine engine = LMCacheEngine.create(config(), CachedPrefill.metadata(model, "my-org/my-model"),
                     KvConnector.host(), List.of());
             CachedPrefill prefill = new CachedPrefill(engine, model)) {
            try (CachedPrefill.Prefill first = prefill.prefill(document)) { // cold: computes, then stores the KV
                first.decode(16);
            }
            int[] prompt = concat(document, question);
            try (CachedPrefill.Prefill second = prefill.prefill(prompt)) { // warm: the document's KV is retrieved
                return new Result(prompt.length, second.cachedTokens(), second.firstToken());
            }
        } finally {
            model.close();
        }
    }

    /** The engine's config; LMCACHE_* variables apply too. */
    public static LMCacheEngineConfig config() {
        return ConfigLoader.builder().set("max_local_cpu_size", 0.25)
                // The keys' seed: every process with the same seed finds this KV on a tier they share;
                // without one each process draws a random seed (as vLLM does) and stores it again.
                .set("hash_seed", "0").build();
    }

    static int[] concat(int[] a, int[] b) {
        int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private JlamaQuickstart() {
    }
}
