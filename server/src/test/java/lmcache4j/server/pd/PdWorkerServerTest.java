package lmcache4j.server.pd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import lmcache4j.engine.json.Json;
import lmcache4j.server.http.BadRequestException;
import lmcache4j.server.http.JsonBody;

/**
 * A PD role's HTTP door, which the proxy calls and anyone on the network can reach: each route
 * answers only the role that serves it, every field is checked at its edge before the model is
 * touched, a worker's refusal is a 400 and its failure a 500 (both counted), and the JSON each side
 * writes is what the other reads.
 */
class PdWorkerServerTest {
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private record Answer(int status, Map<String, Object> body) {
        String error() {
            return String.valueOf(body.get("error"));
        }
    }

    private static final String BEARER = PdWorkerServer.authorization(PdNoticeServerTest.TOKEN);

    private static Answer call(ScriptedWorker w, String method, String path, String json) throws Exception {
        return call(w, method, path, json, BEARER);
    }

    private static Answer call(ScriptedWorker w, String method, String path, String json, String authorization)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://" + w.address() + path)).timeout(Duration.ofSeconds(30));
        if (authorization != null) {
            b = b.header("Authorization", authorization);
        }
        b = json == null ? b.GET() : b.method(method, HttpRequest.BodyPublishers.ofString(json));
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        return new Answer(r.statusCode(), Json.parseObject(r.body()));
    }

    private static Answer status(ScriptedWorker w) throws Exception {
        return call(w, "GET", "/status", null);
    }

    private static long counter(ScriptedWorker w, String name) throws Exception {
        return ((Number) status(w).body().get(name)).longValue();
    }

    private static String prefillJson(String reqId, String receiver) {
        return "{\"req_id\": " + reqId + ", \"prompt_token_ids\": [1, 2, 3], \"receiver\": " + receiver + "}";
    }

    private static final String RECEIVER = "{\"host\": \"127.0.0.1\", \"init_ports\": [7000], \"alloc_ports\": [7100]}";

    @Test
    void eachRouteAnswersOnlyTheRoleThatServesItAndCountsWhatItServed() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(1)) {
            String decodeJson = "{\"req_id\": \"r1\", \"prompt_token_ids\": [4, 5], \"max_tokens\": 3}";
            for (String path : List.of("/decode", "/generate")) {
                Answer a = call(p, "POST", path, decodeJson);
                assertEquals(404, a.status(), path);
                assertTrue(a.error().contains("a prefiller does not serve this"), a.error());
            }
            Answer notDecoder = call(d, "POST", "/prefill", prefillJson("\"r1\"", RECEIVER));
            assertEquals(404, notDecoder.status());
            assertTrue(notDecoder.error().contains("a decoder does not serve this"), notDecoder.error());

            Answer decoded = call(d, "POST", "/decode", decodeJson);
            assertEquals(200, decoded.status(), decoded.body().toString());
            assertArrayEquals(ScriptedWorker.expectedTokens(new int[] {4, 5}, 3),
                    PdWorkerApi.DecodeReply.of(decoded.body()).tokens());
            Answer generated = call(d, "POST", "/generate", decodeJson);
            assertEquals(200, generated.status(), "a colocated worker's route");
            assertEquals(decoded.body(), generated.body(), "the same call as /decode");
            Answer prefilled = call(p, "POST", "/prefill", prefillJson("\"r1\"", RECEIVER));
            assertEquals(200, prefilled.status(), prefilled.body().toString());
            assertEquals("r1", PdWorkerApi.PrefillReply.of(prefilled.body()).reqId());

            Map<String, Object> s = status(d).body();
            assertEquals("decoder", s.get("role"));
            assertEquals(2L, s.get("served"));
            assertEquals(0L, s.get("failed"), "a route the role does not serve is not the worker's failure");
            assertEquals(0L, s.get("in_flight"));
            assertEquals("127.0.0.1", s.get("pd_peer_host"), "the role's own status is added");
            assertEquals(List.of(7_000L), s.get("pd_peer_init_port"));
            assertEquals(1L, counter(p, "served"));
            Answer health = call(p, "GET", "/health", null);
            assertEquals(200, health.status());
            assertEquals("ok", health.body().get("status"));
            int port = d.port();
            d.close();
            try (java.net.ServerSocket again = new java.net.ServerSocket()) { // close freed its port
                again.setReuseAddress(true);
                again.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port));
            }
        }
    }

    @Test
    void onlyCallsWithTheDeploymentsBearerAreServed() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(1)) {
            String decodeJson = "{\"req_id\": \"r1\", \"prompt_token_ids\": [4, 5], \"max_tokens\": 3}";
            String otherDeployment = PdWorkerServer.authorization("another-deployment-token".getBytes(StandardCharsets.UTF_8));
            String raw = "Bearer " + new String(PdNoticeServerTest.TOKEN, StandardCharsets.UTF_8);
            List<String> wrong = java.util.Arrays.asList(null, "", "Bearer", BEARER.substring(0, BEARER.length() - 1),
                    BEARER + "0", otherDeployment, raw, BEARER.replace("Bearer", "Basic"));
            for (String authorization : wrong) {
                Answer a = call(d, "POST", "/decode", decodeJson, authorization);
                assertEquals(401, a.status(), String.valueOf(authorization));
                assertTrue(a.error().contains("a PD worker serves only the PD proxy"), a.error());
                assertEquals(401, call(p, "POST", "/prefill", prefillJson("\"r\"", RECEIVER), authorization).status());
                assertEquals(401, call(d, "GET", "/status", null, authorization).status(), "its ports are not told either");
            }
            assertEquals(0, d.decodes.get() + p.prefills.get(), "no refused call reached the model");
            assertEquals(wrong.size() * 2L, counter(d, "unauthorized"));
            assertEquals(wrong.size(), counter(p, "unauthorized"));
            assertEquals(200, call(d, "POST", "/decode", decodeJson).status());
            assertTrue(BEARER.matches("Bearer [0-9a-f]{64}"), BEARER);
            assertTrue(!BEARER.contains(new String(PdNoticeServerTest.TOKEN, StandardCharsets.UTF_8)), "the token never "
                    + "crosses the wire");
            assertThrows(IllegalArgumentException.class, () -> PdWorkerServer.authorization(new byte[0]));
        }
    }

    @Test
    void aWorkersRefusalIsA400AndItsFailureA500BothCounted() throws Exception {
        try (ScriptedWorker d = ScriptedWorker.decoder(1)) {
            String json = "{\"req_id\": \"r1\", \"prompt_token_ids\": [4, 5], \"max_tokens\": 3}";
            d.onDecode = call -> {
                throw new IllegalArgumentException("decode 1 to 2 tokens, not 3");
            };
            Answer refused = call(d, "POST", "/decode", json);
            assertEquals(400, refused.status());
            assertEquals("decode 1 to 2 tokens, not 3", refused.error());
            d.onDecode = call -> {
                throw new IllegalStateException("the KV buffer is gone");
            };
            Answer failed = call(d, "POST", "/decode", json);
            assertEquals(500, failed.status());
            assertTrue(failed.error().contains("the KV buffer is gone"), failed.error());
            assertEquals(2, counter(d, "failed"));
            assertEquals(0, counter(d, "served"));
            assertEquals(0, counter(d, "in_flight"), "a failed call is no longer in flight");
        }
    }

    @Test
    void aCallInFlightIsCountedUntilItEnds() throws Exception {
        try (ScriptedWorker d = ScriptedWorker.decoder(1)) {
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            d.onDecode = call -> {
                entered.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return ScriptedWorker.echo(call);
            };
            CompletableFuture<Answer> running = CompletableFuture.supplyAsync(() -> {
                try {
                    return call(d, "POST", "/decode", "{\"req_id\": \"r\", \"prompt_token_ids\": [1], \"max_tokens\": 1}");
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, r -> Thread.ofVirtual().start(r));
            assertTrue(entered.await(20, TimeUnit.SECONDS));
            assertEquals(1, counter(d, "in_flight"));
            assertEquals(1, d.inFlight());
            release.countDown();
            assertEquals(200, running.get(30, TimeUnit.SECONDS).status());
            assertEquals(0, counter(d, "in_flight"));
        }
    }

    @Test
    void everyFieldIsCheckedAtItsEdgeBeforeTheModelIsTouched() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(1)) {
            // req_id: 1 to 256 characters
            assertEquals(200, call(p, "POST", "/prefill", prefillJson("\"" + "x".repeat(256) + "\"", RECEIVER)).status());
            assertEquals(200, call(p, "POST", "/prefill", prefillJson("\"x\"", RECEIVER)).status());
            for (String id : List.of("\"" + "x".repeat(257) + "\"", "\"\"", "\"  \"", "7", "null")) {
                Answer a = call(p, "POST", "/prefill", prefillJson(id, RECEIVER));
                assertEquals(400, a.status(), id);
                assertTrue(a.error().contains("\"req_id\""), a.error());
            }
            // receiver: an object of a host and as many init ports as alloc ports, at least one
            for (String receiver : List.of("null", "\"127.0.0.1:7000\"", "{\"init_ports\": [7000], \"alloc_ports\": [7100]}",
                    "{\"host\": \" \", \"init_ports\": [7000], \"alloc_ports\": [7100]}",
                    "{\"host\": \"h\", \"init_ports\": [7000, 7001], \"alloc_ports\": [7100]}",
                    "{\"host\": \"h\", \"init_ports\": [], \"alloc_ports\": []}",
                    "{\"host\": \"h\", \"init_ports\": [\"7000\"], \"alloc_ports\": [7100]}")) {
                Answer a = call(p, "POST", "/prefill", prefillJson("\"r\"", receiver));
                assertEquals(400, a.status(), receiver);
            }
            // max_tokens: 1 .. 2^31-1
            for (String max : List.of("0", "-1", "2147483648", "1.5", "\"3\"")) {
                Answer a = call(d, "POST", "/decode", "{\"req_id\": \"r\", \"prompt_token_ids\": [1], \"max_tokens\": " + max + "}");
                assertEquals(400, a.status(), max);
                assertTrue(a.error().contains("\"max_tokens\""), a.error());
            }
            d.onDecode = call -> new PdWorkerApi.DecodeReply(new int[] {call.maxTokens()}, 0, 1, 0, 0, new double[1],
                    Optional.empty());
            Answer edge = call(d, "POST", "/decode", "{\"req_id\": \"r\", \"prompt_token_ids\": [1], \"max_tokens\": 2147483647}");
            assertEquals(200, edge.status(), edge.body().toString());
            assertEquals(List.of(2_147_483_647L), edge.body().get("token_ids"), "the largest count reaches the worker whole");
            Answer bad = call(d, "POST", "/decode", "{\"req_id\": \"r\", \"prompt_token_ids\": [1, \"2\"], \"max_tokens\": 1}");
            assertEquals(400, bad.status());
            assertTrue(bad.error().contains("\"prompt_token_ids\"[1]"), bad.error());
            assertEquals("HTTP/1.1 413", statusLineOfABodyDeclaredTooLong(d).substring(0, 12),
                    "a body over 1 MiB is refused on its Content-Length alone");
            assertEquals(2, p.prefills.get(), "only the good calls reached the prefiller's model");
            assertEquals(1, d.decodes.get(), "only the good call reached the decoder's model");
        }
    }

    /** Declares a body one byte over the limit (1 MiB, documented) and sends none of it: the answer must come from the header alone. */
    private static String statusLineOfABodyDeclaredTooLong(ScriptedWorker w) throws IOException {
        try (java.net.Socket s = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), w.port())) {
            s.setSoTimeout(20_000);
            s.getOutputStream().write(("POST /decode HTTP/1.1\r\nHost: x\r\nAuthorization: " + BEARER + "\r\nContent-Length: "
                    + ((1 << 20) + 1) + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            return new java.io.BufferedReader(new java.io.InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
        }
    }

    @Test
    void whatEachSideWritesTheOtherReads() {
        PdWorkerApi.ReceiverSpec receiver = new PdWorkerApi.ReceiverSpec("decoder-1", List.of(7000, 7001), List.of(7100, 7101));
        assertEquals(2, receiver.ranks());
        PdWorkerApi.PrefillCall prefill = new PdWorkerApi.PrefillCall("req-9", new int[] {0, 1, Integer.MAX_VALUE}, receiver);
        PdWorkerApi.PrefillCall read = PdWorkerApi.PrefillCall.of(new JsonBody(Json.parseObject(Json.write(prefill.json()))));
        assertEquals("req-9", read.reqId());
        assertArrayEquals(prefill.tokens(), read.tokens());
        assertEquals(receiver, read.receiver());

        PdWorkerApi.DecodeCall decode = new PdWorkerApi.DecodeCall("req-9", new int[] {3, 4}, 17, true);
        PdWorkerApi.DecodeCall decodeRead = PdWorkerApi.DecodeCall.of(new JsonBody(Json.parseObject(Json.write(decode.json()))));
        assertEquals(17, decodeRead.maxTokens());
        assertEquals(true, decodeRead.returnLogits());
        assertArrayEquals(decode.tokens(), decodeRead.tokens());
        assertThrows(IllegalArgumentException.class, () -> new PdWorkerApi.DecodeCall("r", new int[] {1}, 0, false));

        PdWorkerApi.PrefillReply reply = new PdWorkerApi.PrefillReply("req-9", 3, 1, 2, 4, 1L << 33, Optional.of("buffer full"),
                true, 12.5, 0.25);
        assertEquals(reply, PdWorkerApi.PrefillReply.of(Json.parseObject(Json.write(reply.json()))));
        PdWorkerApi.PrefillReply none = new PdWorkerApi.PrefillReply("r", 0, 0, 0, 0, 0, Optional.empty(), false, 0, 0);
        assertEquals(none, PdWorkerApi.PrefillReply.of(Json.parseObject(Json.write(none.json()))));

        float[] logits = {1.5f, -0.25f, Float.MIN_VALUE};
        PdWorkerApi.DecodeReply answer = new PdWorkerApi.DecodeReply(new int[] {7, 8}, 256, 1, 3.5, 9.25, new double[] {3.5, 9.25},
                Optional.of(logits));
        PdWorkerApi.DecodeReply answerRead = PdWorkerApi.DecodeReply.of(Json.parseObject(Json.write(answer.json())));
        assertEquals(answer, answerRead);
        assertEquals(answer.hashCode(), answerRead.hashCode());
        assertNotEquals(answer, new PdWorkerApi.DecodeReply(new int[] {7, 9}, 256, 1, 3.5, 9.25, new double[2], Optional.empty()));
        assertNotEquals(answer, new PdWorkerApi.DecodeReply(new int[] {7, 8}, 0, 1, 3.5, 9.25, new double[2], Optional.empty()));
        assertNotEquals(answer, new PdWorkerApi.DecodeReply(new int[] {7, 8}, 256, 2, 3.5, 9.25, new double[2], Optional.empty()));
        assertArrayEquals(logits, answerRead.logits().orElseThrow(), "logits round-trip exactly (a float widened, then narrowed)");
        assertArrayEquals(new double[] {3.5, 9.25}, answerRead.tokenTimesMs());
        assertEquals(3.5, answerRead.ttftMs());
        assertEquals(9.25, answerRead.totalMs());
        assertEquals(256, answerRead.cachedTokens());

        Map<String, Object> lacking = new LinkedHashMap<>(answer.json());
        lacking.remove("token_times_ms");
        assertArrayEquals(new double[0], PdWorkerApi.DecodeReply.of(lacking).tokenTimesMs(), "no times: none, not a failure");
        lacking.remove("prefill_positions");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdWorkerApi.DecodeReply.of(lacking));
        assertTrue(e.getMessage().contains("\"prefill_positions\""), e.getMessage());
        assertThrows(BadRequestException.class, () -> PdWorkerApi.ReceiverSpec.of(List.of()));
        assertThrows(IllegalArgumentException.class, () -> new PdWorkerApi.ReceiverSpec("h", List.of(1), List.of()));
    }

    @Test
    void aWorkerServerNeedsAWorker() {
        assertThrows(NullPointerException.class, () -> PdWorkerServer.start(new java.net.InetSocketAddress("127.0.0.1", 0), 1, null,
                Optional.empty()));
    }
}
