package lmcache4j.bench.model;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.jlama.CachedPrefill;

/**
 * The demo's workload on a real transformer (Jlama): every request looks up its prompt's cached
 * prefix, retrieves it into Jlama's KV buffer, prefills the rest, greedy-decodes a few tokens and
 * stores its KV. Every request that reused KV is checked against the cold path (the same prompt
 * with the cache bypassed): equal tokens, and the last position's logits compared.
 *
 * <p>Three phases: the workload as a server sees it (its reuse comes from the CPU tier); then one
 * request of each prompt family again with the CPU tier emptied (from the disk tier); then, with a
 * remote, again with the CPU tier emptied and the disk tier bypassed (from the remote).
 */
public final class ModelDemo {
    /** Where a request's reused KV came from. */
    public enum Source {
        COLD("cold (nothing cached)"), CPU("warm from the CPU tier"), DISK("warm from the disk tier"),
        REMOTE("warm from the remote");

        private final String label;

        Source(String label) {
            this.label = label;
        }

        /** What the report calls it. */
        public String label() {
            return label;
        }
    }

    /**
     * @param cpuGb        the CPU tier, GiB
     * @param disk         the disk tier's directory, or empty for none
     * @param diskGb       the disk tier, GB
     * @param remote       a remote URL ({@code lm://host:port}, {@code redis://…}), or empty
     * @param seed         the workload's seed
     * @param decodeTokens greedy tokens per request (the first included)
     * @param shape        the workload's sizes
     */
    public record Settings(double cpuGb, Optional<Path> disk, double diskGb, Optional<String> remote,
                           long seed, int decodeTokens, ModelWorkload.Shape shape) {
        public Settings {
            Objects.requireNonNull(disk, "disk");
            Objects.requireNonNull(remote, "remote");
            Objects.requireNonNull(shape, "shape");
            if (decodeTokens < 1) {
                throw new IllegalArgumentException("decode at least 1 token, not " + decodeTokens);
            }
        }
    }

    /** One served request. */
    public record Served(Source source, ModelWorkload.Kind kind, String name, int promptTokens, int cachedTokens,
                         long ttftNanos, long coldTtftNanos, int[] tokens, int[] coldTokens, double maxLogitDiff,
                         long storeNanos, long computeNanos) {
        /** Whether the greedy tokens equal the cold path's (always for a cold request). */
        public boolean tokensEqual() {
            return Arrays.equals(tokens, coldTokens);
        }
    }

    /** Told after each request. */
    public interface Progress {
        void served(Served request, int done, int total);
    }

    private ModelDemo() {
    }

    /** The engine config the demo runs with. */
    public static LMCacheEngineConfig config(Settings s) {
        ConfigLoader.Builder b = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", s.cpuGb()).set("hash_seed", "0");
        s.disk().ifPresent(d -> b.set("local_disk", d.toString()).set("max_local_disk_size", s.diskGb()));
        s.remote().ifPresent(r -> b.set("remote_url", r));
        return b.build();
    }

    /**
     * Runs the demo on {@code model}, after warming the JIT on two prompts (a serving process's
     * kernels are compiled after its first requests; the logits are compared on compiled code).
     */
    public static List<Served> run(Settings s, AbstractModel model, String modelName, Progress progress) {
        List<ModelWorkload.Request> workload = ModelWorkload.requests(s.shape(), model.getConfig().vocabularySize, s.seed());
        List<ModelWorkload.Request> replays = lastOfEachFamily(workload);
        int total = workload.size() + (s.disk().isPresent() ? replays.size() : 0) + (s.remote().isPresent() ? replays.size() : 0);
        List<Served> served = new ArrayList<>();
        try (LMCacheEngine engine = LMCacheEngine.create(config(s), CachedPrefill.metadata(model, modelName),
                KvConnector.host(1), List.of());
             CachedPrefill prefill = new CachedPrefill(engine, model)) {
            warmUp(prefill, model.getConfig().vocabularySize, s.seed());
            for (ModelWorkload.Request r : workload) {
                served.add(serve(prefill, r, Source.CPU, s.decodeTokens()));
                progress.served(served.getLast(), served.size(), total);
            }
            if (s.disk().isPresent()) {
                keepOnlyIn(engine, replays, LocalDiskBackend.NAME);
                for (ModelWorkload.Request r : replays) {
                    served.add(serve(prefill, r, Source.DISK, s.decodeTokens()));
                    progress.served(served.getLast(), served.size(), total);
                }
            }
            if (s.remote().isPresent()) {
                keepOnlyIn(engine, replays, RemoteBackend.NAME);
                engine.storage().tier(LocalDiskBackend.NAME).ifPresent(d -> engine.storage().setBypass(d.name(), true));
                for (ModelWorkload.Request r : replays) {
                    served.add(serve(prefill, r, Source.REMOTE, s.decodeTokens()));
                    progress.served(served.getLast(), served.size(), total);
                }
            }
        }
        return served;
    }

    private static void warmUp(CachedPrefill prefill, int vocabulary, long seed) {
        ModelWorkload.Shape shape = new ModelWorkload.Shape(1, 1_024, 2, 0, 0, 0, 0, 0, 0);
        for (ModelWorkload.Request r : ModelWorkload.requests(shape, vocabulary, seed ^ 0x5eed)) {
            try (CachedPrefill.Prefill p = prefill.prefillWithoutCache(r.tokens())) {
                p.decode(2);
            }
        }
    }

    /** Serves one request through the cache; a request that reused KV is checked against the cold path. */
    static Served serve(CachedPrefill prefill, ModelWorkload.Request r, Source warmSource, int decode) {
        int cached;
        long ttft;
        long store;
        long compute;
        int[] tokens;
        float[] logits;
        try (CachedPrefill.Prefill p = prefill.prefill(r.tokens())) {
            cached = p.cachedTokens();
            ttft = p.timeToFirstTokenNanos();
            store = p.storeNanos();
            compute = p.computeNanos();
            tokens = p.decode(decode);
            logits = p.logits();
        }
        if (cached == 0) {
            return new Served(Source.COLD, r.kind(), r.name(), r.tokens().length, 0, ttft, ttft, tokens, tokens, 0, store,
                    compute);
        }
        try (CachedPrefill.Prefill cold = prefill.prefillWithoutCache(r.tokens())) {
            int[] coldTokens = cold.decode(decode);
            float[] coldLogits = cold.logits();
            double worst = 0;
            for (int i = 0; i < logits.length; i++) {
                worst = Math.max(worst, Math.abs((double) logits[i] - coldLogits[i]));
            }
            return new Served(warmSource, r.kind(), r.name(), r.tokens().length, cached, ttft,
                    cold.timeToFirstTokenNanos(), tokens, coldTokens, worst, store, compute);
        }
    }

    /** The last request of each prompt family: the ones with the most to reuse. */
    private static List<ModelWorkload.Request> lastOfEachFamily(List<ModelWorkload.Request> workload) {
        List<ModelWorkload.Request> out = new ArrayList<>();
        for (int i = 0; i < workload.size(); i++) {
            String family = family(workload.get(i).name());
            boolean later = false;
            for (int j = i + 1; j < workload.size() && !later; j++) {
                later = family(workload.get(j).name()).equals(family);
            }
            if (!later) {
                out.add(workload.get(i));
            }
        }
        return out;
    }

    private static String family(String name) {
        String[] words = name.split(" ");
        return words[0] + " " + words[1];
    }

    /** Waits until {@code tier} holds the replayed prompts' chunks, then empties the CPU tier, so the replays read from {@code tier}. */
    private static void keepOnlyIn(LMCacheEngine engine, List<ModelWorkload.Request> replays, String tier) {
        for (ModelWorkload.Request r : replays) {
            TierWait.untilHeld(engine, r.tokens(), tier);
        }
        TierWait.emptyCpuTier(engine);
    }
}
