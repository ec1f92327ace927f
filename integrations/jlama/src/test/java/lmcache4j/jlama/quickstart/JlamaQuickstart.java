package lmcache4j.jlama.quickstart;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.jlama.CachedPrefill;

/** A Jlama application whose prefills reuse cached KV: the second prompt shares the first one's 1,024 tokens. */
public final class JlamaQuickstart {
    /** What the second prefill did: prompt tokens, tokens whose KV came from the cache, and its first token. */
    public record Result(int promptTokens, int cachedTokens, int firstToken) {
    }

    public static Result run(Path modelDir, int[] document, int[] question) {
        AbstractModel model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        try (LMCacheEngine engine = LMCacheEngine.create(
                     ConfigLoader.builder().set("max_local_cpu_size", 0.25).build(), // LMCACHE_* variables apply too
                     CachedPrefill.metadata(model, "my-org/my-model"), KvConnector.host(), List.of());
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

    static int[] concat(int[] a, int[] b) {
        int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private JlamaQuickstart() {
    }
}
