package lmcache4j.bench.pd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
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
import lmcache4j.engine.json.Json;
import lmcache4j.engine.pd.PdBackend;
import lmcache4j.engine.pd.wire.PdConnection;
import lmcache4j.engine.pd.wire.PdMessages;
import lmcache4j.engine.pd.wire.ProxyNotif;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.jlama.CachedPrefill;
import lmcache4j.jlama.SyntheticLlama;
import lmcache4j.server.pd.PdWorkerApi;
import lmcache4j.server.pd.PdWorkerServer;

/**
 * Disaggregated prefill with a real transformer on both sides (the tiny synthetic Llama, in this
 * JVM: each role its own engine, real PD ports, a real proxy, loopback HTTP): a request's tokens are
 * the single process's, the decoder computes only the last position; and every fault of the issue
 * ends with the right tokens, counted, in bounded time, with nothing left held.
 */
class PdThroughJlamaTest {
    private static final int DECODE = 5;
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    /** What the workers demand of every caller (the proxy ignores it). */
    private static final String WORKER_AUTHORIZATION = PdWorkerServer.authorization(
            InProcessPd.TOKEN.getBytes(StandardCharsets.UTF_8));

    @TempDir
    static Path dir;
    private static AbstractModel model;
    private static LMCacheEngine referenceEngine;
    private static CachedPrefill reference;

    @BeforeAll
    static void load() throws IOException {
        model = ModelSupport.loadModel(SyntheticLlama.tiny().writeTo(dir.resolve("model")).toFile(), DType.F32, DType.F32);
        referenceEngine = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", 256)
                .set("max_local_cpu_size", 0.02).set("hash_seed", "0").build(), CachedPrefill.metadata(model,
                InProcessPd.MODEL), KvConnector.host(1), List.of());
        reference = new CachedPrefill(referenceEngine, model);
        for (int i = 0; i < 3; i++) { // warm the JIT on Jlama's kernels
            try (CachedPrefill.Prefill p = reference.prefillWithoutCache(prompt(700, 900 + i))) {
                p.decode(2);
            }
        }
    }

    @AfterAll
    static void close() {
        reference.close();
        referenceEngine.close();
        model.close();
    }

    static int[] prompt(int n, long seed) {
        return new Random(seed).ints(n, 3, SyntheticLlama.VOCAB_SIZE).toArray();
    }

    /** The single process's greedy tokens and last-position logits for {@code prompt}. */
    private static CachedPrefill.Prefill local(int[] prompt) {
        return reference.prefillWithoutCache(prompt);
    }

    static Map<String, Object> post(String url, String path, Map<String, Object> body) throws IOException, InterruptedException {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://" + url + path))
                .header("Authorization", WORKER_AUTHORIZATION).timeout(Duration.ofSeconds(120)).POST(HttpRequest.BodyPublishers.ofString(Json.write(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        Map<String, Object> m = new java.util.LinkedHashMap<>(Json.parseObject(r.body()));
        m.put("http_status", (long) r.statusCode());
        return m;
    }

    static Map<String, Object> get(String url, String path) throws IOException, InterruptedException {
        return Json.parseObject(HTTP.send(HttpRequest.newBuilder(URI.create("http://" + url + path))
                .header("Authorization", WORKER_AUTHORIZATION).GET().build(),
                HttpResponse.BodyHandlers.ofString()).body());
    }

    static Map<String, Object> generate(InProcessPd pd, int[] prompt) throws IOException, InterruptedException {
        Map<String, Object> m = post(pd.proxyUrl(), "/generate", PdCluster.generate(prompt, DECODE, true));
        assertEquals(200L, m.get("http_status"), String.valueOf(m));
        return m;
    }

    @SuppressWarnings("unchecked")
    static PdWorkerApi.DecodeReply decodeOf(Map<String, Object> answer) {
        Map<String, Object> d = new java.util.LinkedHashMap<>((Map<String, Object>) answer.get("decode"));
        d.put("token_ids", answer.get("token_ids"));
        return PdWorkerApi.DecodeReply.of(d);
    }

    @SuppressWarnings("unchecked")
    static long prefillField(Map<String, Object> answer, String field) {
        return ((Number) ((Map<String, Object>) answer.get("prefill")).get(field)).longValue();
    }

    /** PD's tokens and logits against the single process's. */
    static void assertSameAsOneProcess(int[] prompt, PdWorkerApi.DecodeReply pd) {
        try (CachedPrefill.Prefill p = local(prompt)) {
            assertArrayEquals(p.decode(DECODE), pd.tokens(), "PD's tokens are one process's");
            float[] expected = p.logits();
            float[] got = pd.logits().orElseThrow();
            double worst = 0;
            for (int i = 0; i < expected.length; i++) {
                worst = Math.max(worst, Math.abs(expected[i] - got[i]));
            }
            assertTrue(worst <= 1e-4, "last-position logits differ by " + worst);
        }
    }

    static PdBackend.Stats tierOf(InProcessPd.Role decoder) {
        return decoder.worker().receiver().orElseThrow().tier().stats();
    }

    @Test
    void theDecoderGetsEveryChunkComputesOnlyTheLastPositionAndGivesOneProcessesTokens() throws Exception {
        try (InProcessPd pd = new InProcessPd(model, 1, 1, 16L << 20, 2_000, List.of())) {
            for (int length : new int[] {300, 1_024, 1_500}) {
                int[] p = prompt(length, length);
                Map<String, Object> answer = generate(pd, p);
                PdWorkerApi.DecodeReply d = decodeOf(answer);
                assertEquals(1, d.prefillPositions(), "the decoder computed only the last position of " + length);
                assertEquals(length - 1, d.cachedTokens());
                assertEquals((length + 255) / 256, prefillField(answer, "pushed_chunks"), "every chunk, the partial one too");
                assertEquals(Boolean.TRUE, answer.get("noticed"));
                assertSameAsOneProcess(p, d);
            }
            PdBackend.Stats t = tierOf(pd.decoders.getFirst());
            assertEquals(0, t.heldChunks(), "every pushed chunk was read and released");
            assertEquals(0, t.usedBytes());
        }
    }

    @Test
    void aFullDecoderBufferIsRefusedAndTheDecoderComputesTheRest() throws Exception {
        // 1 MiB holds 8 of the tiny model's 128 KiB chunks; the prompt has 12.
        try (InProcessPd pd = new InProcessPd(model, 1, 1, 1L << 20, 2_000, List.of())) {
            int[] p = prompt(2_900, 5);
            Map<String, Object> answer = generate(pd, p);
            PdWorkerApi.DecodeReply d = decodeOf(answer);
            assertEquals(8, prefillField(answer, "pushed_chunks"));
            assertTrue(prefillField(answer, "refused_chunks") >= 1, String.valueOf(answer.get("prefill")));
            assertEquals(8 * 256, d.cachedTokens(), "the pushed prefix was used");
            assertEquals(2_900 - 8 * 256, d.prefillPositions(), "the rest computed by the decoder");
            assertSameAsOneProcess(p, d);
            assertTrue(tierOf(pd.decoders.getFirst()).refusedChunks() >= 1, "counted");
        }
    }

    @Test
    void aDecoderThatIsGoneIsReplacedByAnotherAndWithNoneLeftTheAnswerSaysWhy() throws Exception {
        int dead;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            dead = s.getLocalPort(); // nobody listens here once closed
        }
        try (InProcessPd pd = new InProcessPd(model, 1, 1, 16L << 20, 1_000, List.of("127.0.0.1:" + dead))) {
            for (int i = 0; i < 3; i++) { // whichever decoder the proxy picks first, the request is answered right
                int[] p = prompt(600, 20 + i);
                assertSameAsOneProcess(p, decodeOf(generate(pd, p)));
            }
            InProcessPd.Role decoder = pd.decoders.removeFirst();
            decoder.close(); // the only live decoder goes away
            Map<String, Object> answer = post(pd.proxyUrl(), "/generate", PdCluster.generate(prompt(600, 30), DECODE, false));
            assertEquals(502L, answer.get("http_status"));
            String error = String.valueOf(answer.get("error"));
            assertTrue(error.contains("decoder 127.0.0.1:" + dead) && error.contains("decoder " + decoder.url()), error);
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void aPrefillerWhoseDecoderStopsAnsweringGivesUpInTimeAndFreesItsStaging() throws Exception {
        try (InProcessPd pd = new InProcessPd(model, 1, 1, 16L << 20, 500, List.of());
             ServerSocket silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            List<Socket> held = new java.util.concurrent.CopyOnWriteArrayList<>();
            Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        held.add(silent.accept()); // accepts, never answers
                    }
                } catch (IOException e) {
                    // closed
                }
            });
            int port = silent.getLocalPort();
            long t0 = System.nanoTime();
            Map<String, Object> answer = post(pd.prefillers.getFirst().url(), "/prefill", new PdWorkerApi.PrefillCall("silent-1",
                    prompt(1_024, 40), new PdWorkerApi.ReceiverSpec("127.0.0.1", List.of(port), List.of(port))).json());
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(200L, answer.get("http_status"), String.valueOf(answer));
            assertEquals(0L, answer.get("pushed_chunks"));
            assertEquals(4L, answer.get("failed_chunks"));
            assertTrue(ms >= 450 && ms < 10_000, "gave up after its 500 ms timeout, answered after " + ms + " ms");
            assertTrue(String.valueOf(answer.get("stop_reason")).contains("cannot reach the receiver"), String.valueOf(answer));
            Map<String, Object> push = (Map<String, Object>) get(pd.prefillers.getFirst().url(), "/status").get("push");
            assertEquals(4L, push.get("failed_chunks"));
            assertEquals(0L, push.get("staging_used_bytes"), "the staged chunks are freed");
            for (Socket s : held) {
                s.close();
            }
        }
    }

    @Test
    void aForgedReadyNoticeIsRefusedAndCountedAndTheRequestStillRight() throws Exception {
        try (InProcessPd pd = new InProcessPd(model, 1, 1, 16L << 20, 2_000, List.of())) {
            int noticePort = pd.proxy.noticePort();
            // Without the token: the proxy's proof cannot be checked by a stranger, who sends a proof of its own.
            try (SocketChannel c = SocketChannel.open(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), noticePort))) {
                LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO, 32,
                        LmProtocol.PLACEHOLDER_KEY)), ByteBuffer.wrap(new byte[32]));
                LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES + 64);
                LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF, 32,
                        LmProtocol.PLACEHOLDER_KEY)), ByteBuffer.wrap(new byte[32]));
                assertEquals(LmProtocol.FAIL, LmProtocol.replyCode(LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES)));
            }
            // With the token (a member of the deployment): a notice for a request the proxy never sent is refused.
            try (PdConnection c = PdConnection.connect("127.0.0.1", noticePort,
                    InProcessPd.TOKEN.getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(5), 4096)) {
                c.sendMessage(PdMessages.encode(new ProxyNotif("pd-1-00000000")));
                assertEquals(new PdConnection.Ack(PdConnection.REFUSED), c.receive());
            }
            int[] p = prompt(900, 50);
            PdWorkerApi.DecodeReply d = decodeOf(generate(pd, p));
            assertSameAsOneProcess(p, d);
            Map<String, Object> status = pd.proxy.statusNow();
            assertEquals(1L, status.get("notice_auth_failures"));
            assertEquals(1L, status.get("notices_unknown"));
            assertEquals(1L, status.get("notices"), "the real prefiller's notice counted");
        }
    }

    @Test
    void badRequestsAreRefusedNamingTheField() throws Exception {
        try (InProcessPd pd = new InProcessPd(model, 1, 1, 16L << 20, 2_000, List.of())) {
            Map<String, Object> noMax = post(pd.proxyUrl(), "/generate", Map.of("prompt_token_ids", List.of(5L, 6L)));
            assertEquals(400L, noMax.get("http_status"));
            assertTrue(String.valueOf(noMax.get("error")).contains("max_tokens"), String.valueOf(noMax));
            Map<String, Object> empty = post(pd.proxyUrl(), "/generate", Map.of("prompt_token_ids", List.of(), "max_tokens", 2L));
            assertTrue(String.valueOf(empty.get("error")).contains("prompt_token_ids"), String.valueOf(empty));
            Map<String, Object> huge = post(pd.proxyUrl(), "/generate", Map.of("prompt_token_ids", List.of(5L),
                    "max_tokens", 100_000L));
            assertEquals(400L, huge.get("http_status"));
            Map<String, Object> wrongRole = post(pd.decoders.getFirst().url(), "/prefill", Map.of("req_id", "x",
                    "prompt_token_ids", List.of(5L), "receiver", Map.of("host", "h", "init_ports", List.of(1L),
                            "alloc_ports", List.of(2L))));
            assertEquals(404L, wrongRole.get("http_status"));
            assertTrue(String.valueOf(wrongRole.get("error")).contains("a decoder does not serve this"), String.valueOf(wrongRole));
            Map<String, Object> outsideVocabulary = post(pd.proxyUrl(), "/generate", Map.of("prompt_token_ids",
                    List.of(5L, 999_999L), "max_tokens", 2L));
            assertEquals(400L, outsideVocabulary.get("http_status"));
            assertTrue(String.valueOf(outsideVocabulary.get("error")).contains("outside the vocabulary"),
                    String.valueOf(outsideVocabulary));
        }
    }
}
