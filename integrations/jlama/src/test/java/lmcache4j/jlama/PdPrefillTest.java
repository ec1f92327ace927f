package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.pd.PdReceiver;
import lmcache4j.engine.pd.PdSender;
import lmcache4j.engine.pd.PdTransfer;

/**
 * A prefiller's prefill pushes every chunk of its prompt as its batches are computed, over the real
 * PD channel on loopback to a decoder engine in this JVM, and says so in its result; the decoder's
 * prefill then finds the whole prompt and computes only its last position, with the plain prefill's
 * logits.
 */
class PdPrefillTest {
    private static final String TOKEN = "pd-prefill-test-token-0123456789abcdef";

    @TempDir
    static Path dir;
    private static AbstractModel model;

    @BeforeAll
    static void loadModel() throws IOException {
        model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir.resolve("model")).toFile(), DType.F32, DType.F32);
    }

    @AfterAll
    static void closeModel() {
        model.close();
    }

    private static ConfigLoader.Builder pd(String role) {
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256).set("max_local_cpu_size", 0.05)
                .set("hash_seed", "0").set("enable_pd", true).set("pd_role", role).set("pd_buffer_size", 16.0 * (1 << 20))
                .set("pd_buffer_device", "cpu").set("extra_config", Map.of("p2p_token", TOKEN));
    }

    @Test
    void thePushedPromptIsFoundWholeByTheDecoderWhichComputesOnlyItsLastPosition() throws IOException {
        int[] prompt = new Random(6).ints(600, 3, SyntheticLlama.VOCAB_SIZE).toArray();
        try (LMCacheEngine decoder = LMCacheEngine.create(pd("receiver").set("pd_peer_host", "127.0.0.1")
                .set("pd_peer_init_port", List.of(0)).set("pd_peer_alloc_port", List.of(0)).build(),
                CachedPrefill.metadata(model, "synthetic/pd"), KvConnector.host(1), List.of());
             PdReceiver receiver = PdReceiver.start(decoder);
             LMCacheEngine prefiller = LMCacheEngine.create(pd("sender").build(), CachedPrefill.metadata(model, "synthetic/pd"),
                     KvConnector.host(1), List.of());
             PdSender sender = PdSender.create(prefiller);
             CachedPrefill prefillerSide = new CachedPrefill(prefiller, model);
             CachedPrefill decoderSide = new CachedPrefill(decoder, model)) {
            float[] plain;
            try (CachedPrefill.Prefill p = prefillerSide.prefillWithoutCache(prompt)) {
                plain = p.logits();
            }
            PdTransfer push = sender.begin("request-1", prefiller.prepare(prompt, Map.of()), receiver.peer());
            try (CachedPrefill.Prefill p = prefillerSide.prefill(prompt, push)) {
                PdTransfer.Result pushed = p.pushResult().orElseThrow();
                assertEquals(3, pushed.pushedChunks(), "two whole chunks and the partial one: " + pushed);
                assertEquals(0, pushed.failedChunks() + pushed.refusedChunks(), pushed.toString());
            }
            try (CachedPrefill.Prefill d = decoderSide.prefill(prompt)) {
                assertEquals(prompt.length - 1, d.cachedTokens(), "every position but the last from the push");
                assertEquals(1, d.computedTokens());
                assertTrue(d.pushResult().isEmpty(), "the decoder's prefill pushes nothing");
                assertArrayEquals(plain, d.logits(), 1e-4f, "the last position over the pushed KV gives the plain prefill's logits");
            }
        }
    }
}
