package lmcache4j.bench.pd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.bench.model.ModelSource;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.jlama.CachedPrefill;
import lmcache4j.jlama.SyntheticLlama;
import lmcache4j.server.pd.PdWorkerApi;

/**
 * PD as users run it, each part its own JVM (the tiny model): a request through the proxy gives this
 * process's tokens; a prefiller killed (SIGKILL) while it pushes leaves the decoder to compute what
 * did not arrive, the proxy still answers right, later requests too, and the decoder's buffer is
 * empty again after its timeout; the other processes close cleanly (their leak checks).
 */
class PdProcessesTest {
    @TempDir
    static Path dir;
    private static ModelSource source;
    private static AbstractModel model;
    private static LMCacheEngine engine;
    private static CachedPrefill reference;

    @BeforeAll
    static void load() throws IOException {
        Path modelDir = SyntheticLlama.tiny().writeTo(dir.resolve("model"));
        source = new ModelSource(modelDir, "synthetic/tiny", true);
        model = ModelSupport.loadModel(modelDir.toFile(), DType.F32, DType.F32);
        engine = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.02).set("hash_seed", "0").build(), CachedPrefill.metadata(model, source.name()),
                KvConnector.host(1), List.of());
        reference = new CachedPrefill(engine, model);
    }

    @AfterAll
    static void close() {
        reference.close();
        engine.close();
        model.close();
    }

    private static int[] expected(int[] prompt, int decode) {
        try (CachedPrefill.Prefill p = reference.prefillWithoutCache(prompt)) {
            return p.decode(decode);
        }
    }

    @SuppressWarnings("unchecked")
    private static PdWorkerApi.DecodeReply decodeOf(Map<String, Object> answer) {
        Map<String, Object> d = new java.util.LinkedHashMap<>((Map<String, Object>) answer.get("decode"));
        d.put("token_ids", answer.get("token_ids"));
        return PdWorkerApi.DecodeReply.of(d);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> buffer(PdCluster c) {
        return (Map<String, Object>) c.get(c.decoderUrls().getFirst(), "/status").get("pd_buffer");
    }

    @Test
    void aPrefillerKilledMidTransferLeavesTheDecoderToComputeTheRestAndTheProxyAnswersRight() throws Exception {
        Path logs = Path.of("/tmp/pdlogs-" + System.nanoTime());
        java.nio.file.Files.createDirectories(logs);
        try (PdCluster c = PdCluster.start(new PdCluster.Options(source, 1, 1, false, 64L << 20, 1_000, Optional.empty(),
                Optional.empty(), Optional.empty(), logs))) {
            int[] first = new Random(1).ints(300, 3, SyntheticLlama.VOCAB_SIZE).toArray();
            Map<String, Object> firstAnswer = c.post(c.proxyUrl(), "/generate", PdCluster.generate(first, 4, false));
            PdWorkerApi.DecodeReply ok = decodeOf(firstAnswer);
            assertArrayEquals(expected(first, 4), ok.tokens());
            assertEquals(1, ok.prefillPositions(), "every chunk pushed by a live prefiller: " + firstAnswer);

            PdProcess prefiller = c.process(c.prefillerUrls().getFirst());
            int[] prompt = new Random(2).ints(2_600, 3, SyntheticLlama.VOCAB_SIZE).toArray(); // 11 chunks
            long landedBefore = ((Number) buffer(c).get("landed_chunks")).longValue();
            CompletableFuture<Map<String, Object>> answer = c.postAsync(c.proxyUrl(), "/generate",
                    PdCluster.generate(prompt, 4, false));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (((Number) buffer(c).get("landed_chunks")).longValue() == landedBefore && System.nanoTime() < deadline) {
                Thread.sleep(2);
            }
            prefiller.kill(); // mid-transfer: the first chunks landed, the prompt's later batches not computed yet
            PdWorkerApi.DecodeReply d = decodeOf(answer.get(120, TimeUnit.SECONDS));
            assertArrayEquals(expected(prompt, 4), d.tokens(), "the decoder's tokens are one process's");
            assertTrue(d.prefillPositions() > 1, "the decoder computed what did not arrive: " + d.prefillPositions());
            assertTrue(d.cachedTokens() >= 256, "and used the chunks that did: " + d.cachedTokens());

            int[] after = new Random(3).ints(500, 3, SyntheticLlama.VOCAB_SIZE).toArray();
            Map<String, Object> later = c.post(c.proxyUrl(), "/generate", PdCluster.generate(after, 4, false));
            assertArrayEquals(expected(after, 4), decodeOf(later).tokens(), "with the prefiller gone, the decoder computes all");
            assertTrue(String.valueOf(later.get("failures")).contains("prefiller"), String.valueOf(later));

            long freeBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (((Number) buffer(c).get("held_chunks")).longValue() > 0 && System.nanoTime() < freeBy) {
                Thread.sleep(50);
            }
            assertEquals(0L, buffer(c).get("held_chunks"), "no room left held after the timeout");
            assertEquals(0L, buffer(c).get("used_bytes"));
            assertEquals(List.of(), c.stop(), "the decoder and the proxy close cleanly");
        }
    }
}
