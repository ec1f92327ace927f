package lmcache4j.server.pd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import com.sun.net.httpserver.HttpServer;

import org.junit.jupiter.api.Test;

import lmcache4j.engine.json.Json;

/**
 * The PD proxy between real worker HTTP servers whose model work is scripted: a request waits for
 * every decoder rank's notice (and no longer than the notice timeout), a prefiller that fails leaves
 * the decoder to compute without a wait, a refusal is the client's 400 and leaves nothing held, a
 * failing decoder is replaced, load picks the idle worker, and every bound (requests in flight,
 * {@code max_tokens}, addresses) holds at its edge.
 */
class PdProxyTest {
    private static final byte[] TOKEN = PdNoticeServerTest.TOKEN;
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final int MAX_TOKENS = 64;
    private static final int[] PROMPT = {11, 22, 33, 44, 55};

    private record Answer(int status, Map<String, Object> body) {
        String error() {
            return String.valueOf(body.get("error"));
        }
    }

    private static PdProxy.Settings settings(List<ScriptedWorker> prefillers, List<ScriptedWorker> decoders,
                                             Duration noticeTimeout, int maxRequests) {
        return new PdProxy.Settings("127.0.0.1", 0, 0, prefillers.stream().map(ScriptedWorker::address).toList(),
                decoders.stream().map(ScriptedWorker::address).toList(), TOKEN, noticeTimeout, Duration.ofSeconds(20),
                maxRequests, MAX_TOKENS);
    }

    private static PdProxy proxy(List<ScriptedWorker> prefillers, List<ScriptedWorker> decoders) throws IOException {
        return start(settings(prefillers, decoders, Duration.ofSeconds(10), 8), prefillers);
    }

    /** Starts a proxy and tells {@code prefillers} its notice port. */
    private static PdProxy start(PdProxy.Settings s, List<ScriptedWorker> prefillers) throws IOException {
        PdProxy proxy = PdProxy.start(s);
        prefillers.forEach(p -> p.noticePort = proxy.noticePort());
        return proxy;
    }

    private static Answer generate(PdProxy proxy, int[] prompt, int maxTokens) throws IOException, InterruptedException {
        return post(proxy, Json.write(Map.of("prompt_token_ids", PdWorkerApi.tokenList(prompt), "max_tokens", (long) maxTokens)));
    }

    private static Answer post(PdProxy proxy, String json) throws IOException, InterruptedException {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.httpAddress().getPort()
                + "/generate")).timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(json)).build(),
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        return new Answer(r.statusCode(), Json.parseObject(r.body()));
    }

    private static String reqId(Answer a) {
        return (String) a.body().get("req_id");
    }

    private static int[] tokens(Answer a) {
        return ((List<?>) a.body().get("token_ids")).stream().mapToInt(v -> ((Number) v).intValue()).toArray();
    }

    private static long counter(PdProxy proxy, String name) {
        return ((Number) proxy.statusNow().get(name)).longValue();
    }

    /**
     * A prefiller that sends {@code now} notices before it answers and {@code later} more 300 ms after,
     * counting each in {@code sent} as it starts to send it.
     */
    private static void notices(ScriptedWorker prefiller, PdProxy[] proxy, int now, int later, AtomicInteger sent) {
        prefiller.onPrefill = call -> {
            for (int i = 0; i < now; i++) {
                sent.incrementAndGet(); // before: the proxy may act on a notice before its acknowledgement is back
                ScriptedWorker.notice(proxy[0].noticePort(), TOKEN, call.reqId());
            }
            if (later > 0) {
                Thread.ofVirtual().start(() -> {
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException e) {
                        return;
                    }
                    for (int i = 0; i < later; i++) {
                        sent.incrementAndGet();
                        ScriptedWorker.notice(proxy[0].noticePort(), TOKEN, call.reqId());
                    }
                });
            }
            return ScriptedWorker.pushedNothing(call);
        };
    }

    @Test
    void aRequestWaitsForEveryDecoderRanksNoticeThenAnswersTheDecodersTokens() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(2)) {
            PdProxy[] proxy = new PdProxy[1];
            AtomicInteger sent = new AtomicInteger();
            notices(p, proxy, 1, 1, sent); // the second rank's notice comes after the prefiller answered
            AtomicReference<PdWorkerApi.PrefillCall> prefillCall = new AtomicReference<>();
            var sendNotices = p.onPrefill;
            p.onPrefill = call -> {
                prefillCall.set(call);
                return sendNotices.apply(call);
            };
            AtomicInteger sentWhenDecoded = new AtomicInteger(-1);
            AtomicReference<String> decodedId = new AtomicReference<>();
            d.onDecode = call -> {
                sentWhenDecoded.set(sent.get());
                decodedId.set(call.reqId());
                PdWorkerApi.DecodeReply r = ScriptedWorker.echo(call);
                return new PdWorkerApi.DecodeReply(r.tokens(), 0, 1, 1_000.0, 1_001.0, r.tokenTimesMs(), r.logits());
            };
            try (PdProxy px = proxy(List.of(p), List.of(d))) {
                proxy[0] = px;
                long t0 = System.nanoTime();
                Answer a = generate(px, PROMPT, 7);
                double wallMs = (System.nanoTime() - t0) / 1e6;
                assertEquals(200, a.status(), a.body().toString());
                assertArrayEquals(ScriptedWorker.expectedTokens(PROMPT, 7), tokens(a));
                assertEquals(true, a.body().get("noticed"));
                assertEquals(2, sentWhenDecoded.get(), "the decoder was called before both ranks' notices came");
                String reqId = reqId(a);
                assertEquals(reqId, prefillCall.get().reqId());
                assertEquals(reqId, decodedId.get());
                assertArrayEquals(PROMPT, prefillCall.get().tokens());
                assertEquals(new PdWorkerApi.ReceiverSpec("127.0.0.1", List.of(7_000, 7_001), List.of(7_100, 7_101)),
                        prefillCall.get().receiver(), "the prefiller is told the decoder's PD ports");
                assertEquals(p.address(), a.body().get("prefiller"));
                assertEquals(d.address(), a.body().get("decoder"));
                @SuppressWarnings("unchecked")
                Map<String, Object> timings = (Map<String, Object>) a.body().get("timings_ms");
                double prefill = ((Number) timings.get("prefill")).doubleValue();
                double noticeWait = ((Number) timings.get("notice_wait")).doubleValue();
                double decode = ((Number) timings.get("decode")).doubleValue();
                double total = ((Number) timings.get("total")).doubleValue();
                assertTrue(noticeWait >= 250, "the second notice came 300 ms after the prefill: " + timings);
                assertTrue(prefill >= 0 && decode >= 0 && total >= prefill + noticeWait + decode - 1 && total <= wallMs,
                        "measured " + wallMs + " ms: " + timings);
                double ttft = ((Number) timings.get("ttft")).doubleValue();
                assertTrue(ttft >= 1_000 + prefill + noticeWait && ttft <= 1_000 + total, "ttft is the time to the decode "
                        + "call plus the decoder's own (1,000 ms here): " + timings);
                @SuppressWarnings("unchecked")
                Map<String, Object> prefillReply = (Map<String, Object>) a.body().get("prefill");
                assertEquals(reqId(a), prefillReply.get("req_id"), "the prefiller's reply is passed on");
                assertFalse(a.body().containsKey("failures"));
                assertEquals(1, counter(px, "completed"));
                assertEquals(2, counter(px, "notices"));
                assertEquals(0, counter(px, "in_flight"));

                Answer again = generate(px, new int[] {5, 4, 3}, 3);
                assertNotEquals(reqId, again.body().get("req_id"), "each request its own id");
                assertEquals(1, d.statusCalls.get(), "the decoder's ports are read once, not per request");
                HttpResponse<String> health = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                        + px.httpAddress().getPort() + "/health")).build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(200, health.statusCode());
                assertEquals(Map.of("status", "ok"), Json.parseObject(health.body()));
                closeFreesItsPorts(px);
            }
        }
    }

    @Test
    void aMissingNoticeIsWaitedForOnlyUntilTheNoticeTimeout() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(2)) {
            PdProxy[] proxy = new PdProxy[1];
            notices(p, proxy, 1, 0, new AtomicInteger()); // one rank of two
            try (PdProxy px = PdProxy.start(settings(List.of(p), List.of(d), Duration.ofMillis(400), 8))) {
                proxy[0] = px;
                Answer a = generate(px, PROMPT, 2);
                assertEquals(200, a.status(), a.body().toString());
                assertEquals(false, a.body().get("noticed"));
                assertArrayEquals(ScriptedWorker.expectedTokens(PROMPT, 2), tokens(a), "the decoder computes what is missing");
                @SuppressWarnings("unchecked")
                double waited = ((Number) ((Map<String, Object>) a.body().get("timings_ms")).get("notice_wait")).doubleValue();
                assertTrue(waited >= 380 && waited < 5_000, "waited " + waited + " ms for a 400 ms notice timeout");
                assertEquals(1, counter(px, "notice_timeouts"));
            }
        }
    }

    @Test
    void aFailedPrefillerLeavesTheDecoderToComputeWithoutWaitingForNotices() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(1)) {
            p.onPrefill = call -> {
                throw new IllegalStateException("the model crashed");
            };
            // One request at a time, so the notice table holds one: a failed prefill left in it would leave
            // the next request without its notices.
            try (PdProxy px = start(settings(List.of(p), List.of(d), Duration.ofSeconds(30), 1), List.of(p))) {
                long t0 = System.nanoTime();
                Answer a = generate(px, PROMPT, 3);
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertEquals(200, a.status(), a.body().toString());
                assertArrayEquals(ScriptedWorker.expectedTokens(PROMPT, 3), tokens(a));
                assertTrue(ms < 15_000, "took " + ms + " ms: it waited for notices a failed prefill never sends");
                assertEquals(false, a.body().get("noticed"));
                assertFalse(a.body().containsKey("prefill"));
                assertTrue(a.body().get("failures").toString().contains("prefiller " + p.address()), a.body().toString());
                assertEquals(1, counter(px, "prefill_failures"));
                assertEquals(1, counter(px, "completed"));

                p.onPrefill = p::noticeEveryRank;
                Answer next = generate(px, PROMPT, 3);
                assertEquals(true, next.body().get("noticed"), "the failed request was left in the notice table");
            }
        }
    }

    @Test
    void aRequestThePrefillerRefusesIsTheClients400AndLeavesNothingWaiting() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(1)) {
            PdProxy[] proxy = new PdProxy[1];
            notices(p, proxy, 1, 0, new AtomicInteger());
            var sendNotices = p.onPrefill;
            p.onPrefill = call -> {
                if (call.tokens()[0] == 666) {
                    throw new IllegalArgumentException("token 666 is outside the vocabulary");
                }
                return sendNotices.apply(call);
            };
            // One request at a time, so the notice table holds one: a refused request left in it would
            // leave the next without its notice.
            try (PdProxy px = start(settings(List.of(p), List.of(d), Duration.ofSeconds(5), 1), List.of(p))) {
                proxy[0] = px;
                Answer refused = generate(px, new int[] {666, 1}, 2);
                assertEquals(400, refused.status(), refused.body().toString());
                assertTrue(refused.error().contains("the prefiller refused the request: token 666 is outside the vocabulary"),
                        refused.error());
                assertEquals(0, d.decodes.get(), "a request the prefiller refuses goes to no decoder");
                assertEquals(0, counter(px, "prefill_failures"), "a refusal is not the prefiller's failure");

                Answer a = generate(px, PROMPT, 2);
                assertEquals(200, a.status(), a.body().toString());
                assertEquals(true, a.body().get("noticed"), "the refused request left the notice table full");
                assertEquals(1, counter(px, "failed"));
                assertEquals(1, counter(px, "completed"));
            }
        }
    }

    @Test
    void aFailingDecoderIsReplacedAndWithNoneLeftThe502NamesEach() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker bad = ScriptedWorker.decoder(1);
             ScriptedWorker good = ScriptedWorker.decoder(1)) {
            bad.onDecode = call -> {
                throw new IllegalStateException("out of memory on the device");
            };
            try (PdProxy px = proxy(List.of(p), List.of(bad, good))) {
                for (int i = 0; i < 8; i++) {
                    Answer a = generate(px, new int[] {i, i + 1}, 2);
                    assertEquals(200, a.status(), a.body().toString());
                    assertEquals(good.address(), a.body().get("decoder"));
                    assertArrayEquals(ScriptedWorker.expectedTokens(new int[] {i, i + 1}, 2), tokens(a));
                }
                assertEquals(bad.decodes.get(), counter(px, "decoder_failovers"), "one failover per failed decode");
                assertEquals(List.of(Map.of("address", bad.address(), "in_flight", 0L, "failures", (long) bad.decodes.get()),
                        Map.of("address", good.address(), "in_flight", 0L, "failures", 0L)).stream().sorted(
                        java.util.Comparator.comparing(Object::toString)).toList(), ((List<?>) px.statusNow().get("decoders"))
                        .stream().sorted(java.util.Comparator.comparing(Object::toString)).toList(), "each decoder's failures");

                good.onDecode = bad.onDecode;
                int triedBefore = bad.decodes.get() + good.decodes.get();
                Answer none = generate(px, PROMPT, 2);
                assertEquals(triedBefore + 2, bad.decodes.get() + good.decodes.get(), "each decoder tried once");
                assertEquals(502, none.status(), none.body().toString());
                assertTrue(none.error().contains("every decoder failed") && none.error().contains("decoder " + bad.address())
                        && none.error().contains("decoder " + good.address()), none.error());
                assertEquals(8, counter(px, "completed"));
                assertEquals(1, counter(px, "failed"));
                assertEquals(0, counter(px, "in_flight"));
            }
        }
    }

    @Test
    void aDecoderThatRefusesTheRequestIsNotRetriedElsewhere() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d1 = ScriptedWorker.decoder(1);
             ScriptedWorker d2 = ScriptedWorker.decoder(1)) {
            d1.onDecode = call -> {
                throw new IllegalArgumentException("the prompt is longer than the model's context");
            };
            d2.onDecode = d1.onDecode;
            try (PdProxy px = proxy(List.of(p), List.of(d1, d2))) {
                Answer a = generate(px, PROMPT, 2);
                assertEquals(400, a.status(), a.body().toString());
                assertTrue(a.error().contains("the decoder refused the request: the prompt is longer"), a.error());
                assertEquals(1, d1.decodes.get() + d2.decodes.get(), "a refusal is the request's, so no other decoder is asked");
                assertEquals(0, counter(px, "decoder_failovers"));
            }
        }
    }

    @Test
    void decodersThatAreNotDecodersOrDoNotAnswerAreSkipped() throws Exception {
        HttpServer html = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        html.createContext("/", exchange -> {
            byte[] page = "<html>maintenance</html>".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, page.length);
            exchange.getResponseBody().write(page);
            exchange.close();
        });
        html.start();
        int gone;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            gone = s.getLocalPort();
        }
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker notDecoder = ScriptedWorker.prefiller();
             ScriptedWorker good = ScriptedWorker.decoder(1)) {
            String htmlAddress = "127.0.0.1:" + html.getAddress().getPort();
            List<String> decoders = List.of(notDecoder.address(), "127.0.0.1:" + gone, htmlAddress, good.address());
            PdProxy.Settings s = settings(List.of(p), List.of(good), Duration.ofSeconds(5), 8);
            try (PdProxy px = start(new PdProxy.Settings(s.host(), 0, 0, s.prefillers(), decoders, TOKEN,
                    s.noticeTimeout(), s.workerTimeout(), 8, MAX_TOKENS), List.of(p))) {
                for (int i = 0; i < 6; i++) {
                    Answer a = generate(px, PROMPT, 2);
                    assertEquals(200, a.status(), a.body().toString());
                    assertEquals(good.address(), a.body().get("decoder"));
                }
            }
            try (PdProxy px = PdProxy.start(new PdProxy.Settings(s.host(), 0, 0, s.prefillers(),
                    List.of(notDecoder.address(), htmlAddress), TOKEN, s.noticeTimeout(), s.workerTimeout(), 8, MAX_TOKENS))) {
                int prefillsBefore = p.prefills.get();
                Answer a = generate(px, PROMPT, 2);
                assertEquals(502, a.status(), a.body().toString());
                assertTrue(a.error().startsWith("no decoder answered"), a.error());
                assertTrue(a.error().contains("it is not a PD decoder (its /status says role prefiller)"), a.error());
                assertTrue(a.error().contains("a body that is no JSON object"), a.error());
                assertEquals(prefillsBefore, p.prefills.get(), "no prefill without a decoder to push to");
            }
        } finally {
            html.stop(0);
        }
    }

    @Test
    void aDecoderRestartedOnOtherPdPortsIsFoundAgainAfterOneFailedPush() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(1)) {
            AtomicReference<Map<String, Object>> live = new AtomicReference<>(d.extraStatus);
            List<PdWorkerApi.ReceiverSpec> pushedTo = new java.util.concurrent.CopyOnWriteArrayList<>();
            p.onPrefill = call -> { // a push to ports the decoder no longer has fails, as a refused connection does
                pushedTo.add(call.receiver());
                PdWorkerApi.PrefillReply r = p.noticeEveryRank(call);
                List<Integer> livePorts = ((List<?>) live.get().get("pd_peer_init_port")).stream()
                        .map(v -> ((Number) v).intValue()).toList();
                boolean stale = !call.receiver().initPorts().equals(livePorts);
                return stale ? new PdWorkerApi.PrefillReply(call.reqId(), 0, 0, 0, 2, 0, Optional.of("connection refused"),
                        r.notified(), 1.0, 0.0) : r;
            };
            try (PdProxy px = proxy(List.of(p), List.of(d))) {
                assertEquals(200, generate(px, PROMPT, 1).status());
                Map<String, Object> moved = new java.util.LinkedHashMap<>(d.extraStatus);
                moved.put("pd_peer_init_port", List.of(9_000L));
                moved.put("pd_peer_alloc_port", List.of(9_100L));
                d.extraStatus = moved; // the decoder restarted: same HTTP address, fresh PD ports
                live.set(moved);
                assertEquals(200, generate(px, PROMPT, 1).status(), "the push failed; the decoder computed the prompt");
                assertEquals(200, generate(px, PROMPT, 1).status());
                assertEquals(List.of(7_000, 7_000, 9_000), pushedTo.stream().map(r -> r.initPorts().getFirst()).toList(),
                        "after a failed push the decoder's ports are read again");
                assertEquals(2, d.statusCalls.get());
                assertEquals(1, counter(px, "receiver_rereads"));
            }
        }
    }

    @Test
    void aProxyOfAnotherDeploymentIsRefusedByTheWorkers() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(1)) {
            PdProxy.Settings ours = settings(List.of(p), List.of(d), Duration.ofSeconds(5), 8);
            try (PdProxy px = PdProxy.start(new PdProxy.Settings(ours.host(), 0, 0, ours.prefillers(), ours.decoders(),
                    "another-deployment-token".getBytes(StandardCharsets.UTF_8), ours.noticeTimeout(), ours.workerTimeout(), 8,
                    MAX_TOKENS))) {
                Answer a = generate(px, PROMPT, 2);
                assertEquals(502, a.status(), a.body().toString());
                assertTrue(a.error().contains("answered 401") && a.error().contains("a PD worker serves only the PD proxy"),
                        a.error());
                assertEquals(0, p.prefills.get() + d.decodes.get() + d.statusCalls.get(), "nothing reached a worker");
            }
        }
    }

    @Test
    void requestsGoToTheWorkerWithTheFewestInFlight() throws Exception {
        try (ScriptedWorker p1 = ScriptedWorker.prefiller(); ScriptedWorker p2 = ScriptedWorker.prefiller();
             ScriptedWorker d1 = ScriptedWorker.decoder(1); ScriptedWorker d2 = ScriptedWorker.decoder(1);
             PdProxy px = proxy(List.of(p1, p2), List.of(d1, d2))) {
            for (int i = 0; i < 20; i++) { // among equally loaded workers, any: one idle worker does not take all
                assertEquals(200, generate(px, new int[] {i}, 1).status());
            }
            assertTrue(p1.prefills.get() > 0 && p2.prefills.get() > 0, p1.prefills + " / " + p2.prefills);
            assertTrue(d1.decodes.get() > 0 && d2.decodes.get() > 0, d1.decodes + " / " + d2.decodes);

            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            AtomicInteger calls = new AtomicInteger();
            for (ScriptedWorker p : List.of(p1, p2)) {
                p.onPrefill = call -> { // the first prefill, wherever it lands, holds on until released
                    if (calls.getAndIncrement() == 0) {
                        entered.countDown();
                        await(release);
                    }
                    return p.noticeEveryRank(call);
                };
            }
            CompletableFuture<Answer> first = async(px, new int[] {1});
            assertTrue(entered.await(20, TimeUnit.SECONDS));
            List<Answer> meanwhile = new java.util.ArrayList<>();
            for (int i = 0; i < 8; i++) { // all to the idle one, not by chance
                meanwhile.add(generate(px, new int[] {2, i}, 1));
            }
            release.countDown();
            Object busyPrefiller = first.get(30, TimeUnit.SECONDS).body().get("prefiller");
            for (Answer a : meanwhile) {
                assertEquals(200, a.status(), a.body().toString());
                assertNotEquals(busyPrefiller, a.body().get("prefiller"), "a request went to the busy prefiller");
            }

            CountDownLatch decoding = new CountDownLatch(1);
            CountDownLatch decodeRelease = new CountDownLatch(1);
            AtomicInteger decodes = new AtomicInteger();
            for (ScriptedWorker d : List.of(d1, d2)) {
                d.onDecode = call -> {
                    if (decodes.getAndIncrement() == 0) {
                        decoding.countDown();
                        await(decodeRelease);
                    }
                    return ScriptedWorker.echo(call);
                };
            }
            CompletableFuture<Answer> third = async(px, new int[] {3});
            assertTrue(decoding.await(20, TimeUnit.SECONDS));
            meanwhile.clear();
            for (int i = 0; i < 8; i++) {
                meanwhile.add(generate(px, new int[] {4, i}, 1));
            }
            decodeRelease.countDown();
            Object busyDecoder = third.get(30, TimeUnit.SECONDS).body().get("decoder");
            for (Answer a : meanwhile) {
                assertEquals(200, a.status(), a.body().toString());
                assertNotEquals(busyDecoder, a.body().get("decoder"), "a request went to the busy decoder");
            }
        }
    }

    @Test
    void requestsBeyondMaxRequestsAre503AndEveryEndingFreesItsSlot() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(1);
             PdProxy px = start(settings(List.of(p), List.of(d), Duration.ofSeconds(5), 1), List.of(p))) {
            CountDownLatch decoding = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            d.onDecode = call -> {
                decoding.countDown();
                await(release);
                return ScriptedWorker.echo(call);
            };
            CompletableFuture<Answer> first = async(px, PROMPT);
            assertTrue(decoding.await(20, TimeUnit.SECONDS));
            assertEquals(1, counter(px, "in_flight"));
            Answer busy = generate(px, PROMPT, 1);
            assertEquals(503, busy.status(), busy.body().toString());
            assertTrue(busy.error().contains("busy: 1 requests are in flight"), busy.error());
            release.countDown();
            assertEquals(200, first.get(30, TimeUnit.SECONDS).status());

            d.onDecode = call -> {
                throw new IllegalStateException("down");
            };
            assertEquals(502, generate(px, PROMPT, 1).status());
            p.onPrefill = call -> {
                throw new IllegalArgumentException("refused");
            };
            assertEquals(400, generate(px, PROMPT, 1).status());
            p.onPrefill = p::noticeEveryRank;
            d.onDecode = ScriptedWorker::echo;
            assertEquals(200, generate(px, PROMPT, 1).status(), "a failed request gave its slot back");
            assertEquals(1, counter(px, "busy_refusals"));
            assertEquals(4, counter(px, "requests"), "a request refused as busy is not counted as served");
            assertEquals(0, counter(px, "in_flight"));
        }
    }

    @Test
    void badRequestsAreRefusedNamingTheFieldAndMaxTokensHoldsAtItsEdge() throws Exception {
        try (ScriptedWorker p = ScriptedWorker.prefiller(); ScriptedWorker d = ScriptedWorker.decoder(1);
             PdProxy px = proxy(List.of(p), List.of(d))) {
            String prompt = "\"prompt_token_ids\": [1, 2, 3]";
            for (String maxTokens : List.of("0", "-1", String.valueOf(MAX_TOKENS + 1), "\"5\"", "2.5", "null", "true")) {
                Answer a = post(px, "{" + prompt + ", \"max_tokens\": " + maxTokens + "}");
                assertEquals(400, a.status(), maxTokens);
                assertTrue(a.error().contains("\"max_tokens\" must be an integer 1.." + MAX_TOKENS), a.error());
            }
            assertEquals(400, post(px, "{" + prompt + "}").status(), "max_tokens missing");
            Answer empty = post(px, "{\"prompt_token_ids\": [], \"max_tokens\": 1}");
            assertTrue(empty.status() == 400 && empty.error().contains("\"prompt_token_ids\" is empty"), empty.error());
            Answer missing = post(px, "{\"max_tokens\": 1}");
            assertTrue(missing.status() == 400 && missing.error().contains("\"prompt_token_ids\""), missing.error());
            Answer negative = post(px, "{\"prompt_token_ids\": [1, -2], \"max_tokens\": 1}");
            assertTrue(negative.status() == 400 && negative.error().contains("\"prompt_token_ids\"[1]"), negative.error());
            Answer logits = post(px, "{" + prompt + ", \"max_tokens\": 1, \"return_logits\": \"yes\"}");
            assertTrue(logits.status() == 400 && logits.error().contains("return_logits"), logits.error());
            assertEquals(400, post(px, "{not json").status());
            assertEquals(0, counter(px, "requests"), "no bad request reached a worker");
            assertEquals(0, p.prefills.get() + d.decodes.get());

            Answer edge = generate(px, PROMPT, MAX_TOKENS);
            assertEquals(200, edge.status(), edge.body().toString());
            assertEquals(MAX_TOKENS, tokens(edge).length);
            assertEquals(200, generate(px, PROMPT, 1).status());
        }
    }

    @Test
    void settingsAndWorkerAddressesAreCheckedAtTheirEdges() throws IOException {
        assertEquals(new InetSocketAddress("h", 1).getPort(), PdProxy.parseAddress("h:1").getPort());
        assertEquals(65_535, PdProxy.parseAddress("h:65535").getPort());
        assertEquals("h", PdProxy.parseAddress("h:80").getHostString());
        assertEquals("::1", PdProxy.parseAddress("::1:80").getHostString(), "the port is after the last colon");
        for (String bad : List.of("h:0", "h:65536", ":80", "h", "h:", "h:x", "h:-1")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdProxy.parseAddress(bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
        }
        List<String> one = List.of("127.0.0.1:1");
        Duration t = Duration.ofSeconds(1);
        assertThrows(IllegalArgumentException.class, () -> new PdProxy.Settings("127.0.0.1", 0, 0, List.of(), one, TOKEN, t, t, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> new PdProxy.Settings("127.0.0.1", 0, 0, one, List.of(), TOKEN, t, t, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> new PdProxy.Settings("127.0.0.1", 0, 0, one, one, TOKEN, t, t, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new PdProxy.Settings("127.0.0.1", 0, 0, one, one, TOKEN, t, t, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> new PdProxy.Settings("127.0.0.1", 0, 0, one, one, new byte[0], t, t, 1, 1));
        new PdProxy.Settings("127.0.0.1", 0, 0, one, one, TOKEN, t, t, 1, 1);

        int noticePort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            noticePort = s.getLocalPort();
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdProxy.start(new PdProxy.Settings(
                "127.0.0.1", 0, noticePort, one, List.of("decoder-without-port"), TOKEN, t, t, 1, 1)));
        assertTrue(e.getMessage().contains("'decoder-without-port'"), e.getMessage());
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            assertThrows(IOException.class, () -> PdProxy.start(new PdProxy.Settings("127.0.0.1", taken.getLocalPort(),
                    noticePort, one, one, TOKEN, t, t, 1, 1)), "the HTTP port is taken");
        }
        try (ServerSocket free = new ServerSocket()) { // nothing of a failed start holds the notice port
            free.setReuseAddress(true);
            free.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), noticePort));
        }
    }

    /** After {@code close}, neither the HTTP port nor the notice port takes a connection. */
    private static void closeFreesItsPorts(PdProxy px) throws IOException {
        int http = px.httpAddress().getPort();
        int notice = px.noticePort();
        px.close();
        for (int port : List.of(http, notice)) {
            try (ServerSocket again = new ServerSocket()) {
                again.setReuseAddress(true);
                again.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            }
        }
    }

    private static CompletableFuture<Answer> async(PdProxy px, int[] prompt) {
        CompletableFuture<Answer> f = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                f.complete(generate(px, prompt, 1));
            } catch (IOException | InterruptedException | RuntimeException e) {
                f.completeExceptionally(e);
            }
        });
        return f;
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released this call");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
