package lmcache4j.bench.pd;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.bench.model.ModelSource;
import lmcache4j.bench.model.ModelWorkload;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.jlama.CachedPrefill;
import lmcache4j.server.pd.PdWorkerApi;

/**
 * {@code demo --model --pd}: the model demo's workload through disaggregated prefill, three
 * processes (a proxy, a prefiller, a decoder: {@link PdCluster}), each request's generated tokens
 * checked against this process doing prefill and decode itself (plain Jlama, no cache): equal
 * tokens, and the last prompt position's logits compared.
 */
public final class PdDemo {
    /**
     * @param seed         the workload's seed
     * @param decodeTokens tokens generated per request
     * @param shape        the workload's sizes
     * @param bufferBytes  the roles' {@code pd_buffer_size}
     */
    public record Settings(long seed, int decodeTokens, ModelWorkload.Shape shape, long bufferBytes) {
        public Settings {
            if (decodeTokens < 1) {
                throw new IllegalArgumentException("decode at least 1 token, not " + decodeTokens);
            }
        }
    }

    /**
     * One request through PD and in one process.
     *
     * @param decoderPrefillPositions positions the decoder computed (1: only the last)
     * @param ttftPdMs                from the proxy's receipt of the request to the decoder's first token
     * @param ttftLocalMs             the single process's prefill to its first token
     */
    public record Served(String name, int promptTokens, int[] pdTokens, int[] localTokens, double maxLogitDiff,
                         int decoderPrefillPositions, int pushedChunks, boolean noticed, double ttftPdMs, double ttftLocalMs) {
        /** Whether PD generated the single process's tokens. */
        public boolean tokensEqual() {
            return Arrays.equals(pdTokens, localTokens);
        }
    }

    /** Told after each request. */
    public interface Progress {
        void served(Served request, int done, int total);
    }

    private PdDemo() {
    }

    /**
     * Starts the deployment in {@code dir}, warms every process's JIT on two prompts, plays the
     * workload and stops the deployment; {@code local} is this process's copy of the model.
     */
    public static PdDemoReport run(Settings s, ModelSource source, AbstractModel local, Path dir, Progress progress)
            throws IOException {
        int vocabulary = local.getConfig().vocabularySize;
        List<ModelWorkload.Request> workload = ModelWorkload.requests(s.shape(), vocabulary, s.seed());
        long started = System.nanoTime();
        List<Served> served = new ArrayList<>();
        List<String> unclean;
        Map<String, Object> proxyStatus;
        try (PdCluster cluster = PdCluster.start(new PdCluster.Options(source, 1, 1, false, s.bufferBytes(), 5_000,
                Optional.empty(), Optional.empty(), Optional.empty(), dir));
             LMCacheEngine engine = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                     .set("max_local_cpu_size", 0.05).set("hash_seed", "0").build(), CachedPrefill.metadata(local, source.name()),
                     KvConnector.host(1), List.of());
             CachedPrefill reference = new CachedPrefill(engine, local)) {
            warmUp(cluster, reference, vocabulary, s);
            for (ModelWorkload.Request r : workload) {
                served.add(serve(cluster, reference, r, s.decodeTokens()));
                progress.served(served.getLast(), served.size(), workload.size());
            }
            proxyStatus = cluster.get(cluster.proxyUrl(), "/status");
            unclean = cluster.stop();
        }
        return new PdDemoReport(source.name(), served, proxyStatus, unclean, System.nanoTime() - started);
    }

    /**
     * Compiles every process's kernels for the work it does, as a serving process's are after its
     * first requests: the decoder, which through PD only ever computes a prompt's last position, also
     * prefills whole prompts (directly, nothing pushed), so its Jlama kernels are compiled as this
     * process's are; then requests through PD. Without it the decoder's first answers differ from
     * this process's logits by about 1e-6 (the tokens do not).
     */
    private static void warmUp(PdCluster cluster, CachedPrefill reference, int vocabulary, Settings s) {
        List<ModelWorkload.Request> warm = ModelWorkload.requests(new ModelWorkload.Shape(1, 1_024, 4, 0, 0, 0, 0, 0, 0),
                vocabulary, s.seed() ^ 0x5eed);
        for (ModelWorkload.Request r : warm) {
            cluster.post(cluster.decoderUrls().getFirst(), "/decode", PdCluster.generate(r.tokens(), s.decodeTokens(), false));
            try (CachedPrefill.Prefill p = reference.prefillWithoutCache(r.tokens())) {
                p.decode(s.decodeTokens());
            }
        }
        for (ModelWorkload.Request r : ModelWorkload.requests(new ModelWorkload.Shape(1, 1_024, 4, 0, 0, 0, 0, 0, 0),
                vocabulary, s.seed() ^ 0xbeef)) {
            serve(cluster, reference, r, s.decodeTokens());
        }
    }

    static Served serve(PdCluster cluster, CachedPrefill reference, ModelWorkload.Request r, int decode) {
        Map<String, Object> answer = cluster.post(cluster.proxyUrl(), "/generate", PdCluster.generate(r.tokens(), decode, true));
        @SuppressWarnings("unchecked")
        PdWorkerApi.DecodeReply reply = PdWorkerApi.DecodeReply.of(withTokens((Map<String, Object>) answer.get("decode"),
                answer.get("token_ids")));
        @SuppressWarnings("unchecked")
        Map<String, Object> prefill = (Map<String, Object>) answer.getOrDefault("prefill", Map.of());
        @SuppressWarnings("unchecked")
        Map<String, Object> timings = (Map<String, Object>) answer.get("timings_ms");
        try (CachedPrefill.Prefill cold = reference.prefillWithoutCache(r.tokens())) {
            int[] localTokens = cold.decode(decode);
            float[] logits = cold.logits();
            float[] pd = reply.logits().orElseThrow();
            double worst = pd.length == logits.length ? 0 : Double.POSITIVE_INFINITY;
            for (int i = 0; i < Math.min(pd.length, logits.length); i++) {
                worst = Math.max(worst, Math.abs((double) pd[i] - logits[i]));
            }
            return new Served(r.name(), r.tokens().length, reply.tokens(), localTokens, worst, reply.prefillPositions(),
                    ((Number) prefill.getOrDefault("pushed_chunks", 0L)).intValue(), Boolean.TRUE.equals(answer.get("noticed")),
                    ((Number) timings.get("ttft")).doubleValue(), cold.timeToFirstTokenNanos() / 1e6);
        }
    }

    private static Map<String, Object> withTokens(Map<String, Object> decode, Object tokens) {
        Map<String, Object> m = new java.util.LinkedHashMap<>(decode);
        m.put("token_ids", tokens);
        return m;
    }
}
