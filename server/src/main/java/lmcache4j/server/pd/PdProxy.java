package lmcache4j.server.pd;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.engine.json.Json;
import lmcache4j.server.http.BadRequestException;
import lmcache4j.server.http.JsonBody;
import lmcache4j.server.http.JsonHttpServer;

/**
 * The PD proxy ({@code ./lmcache4j pd-proxy}; LMCache's {@code disagg_proxy_server.py}): takes a
 * prompt's token ids and a token count ({@code POST /generate}), sends the request to a prefiller
 * with the decoder's PD ports, waits for every rank's ready notice on its notice port, sends the
 * request to that decoder, and answers with the decoder's tokens and the timings.
 *
 * <ul>
 *   <li><b>By load.</b> Of several prefillers and decoders, each request goes to the one with the
 *       fewest requests this proxy has in flight there.</li>
 *   <li><b>Faults.</b> A prefiller that fails or whose notice does not come within
 *       {@code noticeTimeout}: the request goes on to the decoder, which computes what did not
 *       arrive. A decoder that fails: the request goes to another decoder (which computes the prompt),
 *       else the answer is a 502 naming the failures. A push that failed (a decoder restarted on
 *       other PD ports): that decoder's ports are read again for the next request.</li>
 *   <li><b>Authenticated.</b> Its calls to the workers carry {@link PdWorkerServer#authorization}'s
 *       bearer; its own {@code /generate} is open, as vLLM's API server is.</li>
 *   <li><b>Bounded.</b> At most {@code maxRequests} requests at once (503 beyond), each worker call
 *       within {@code workerTimeout}; the notice table holds only requests in flight.</li>
 * </ul>
 */
public final class PdProxy implements AutoCloseable {
    static {
        // A prefill of a long prompt on a busy machine takes longer than the JSON server's 30 s default to
        // answer; read when the JDK's HTTP server configuration loads, so set before the first server.
        PdLimits.allowLongAnswers();
    }

    private static final System.Logger LOG = System.getLogger(PdProxy.class.getName());

    /**
     * @param host          where the HTTP API and the notice port bind
     * @param httpPort      the HTTP API's port (0: any free one)
     * @param noticePort    the notice port, the senders' {@code pd_proxy_port} (0: any free one)
     * @param prefillers    the prefillers' HTTP addresses, {@code host:port}
     * @param decoders      the decoders' HTTP addresses, {@code host:port}
     * @param token         the deployment's PD token ({@code p2p_token}, or derived from its secret)
     * @param noticeTimeout how long to wait for a request's notices once its prefiller has answered
     * @param workerTimeout the bound of one call to a worker
     * @param maxRequests   requests in flight at most
     * @param maxTokens     the largest {@code max_tokens} a request may ask for
     */
    public record Settings(String host, int httpPort, int noticePort, List<String> prefillers, List<String> decoders,
                           byte[] token, Duration noticeTimeout, Duration workerTimeout, int maxRequests, int maxTokens) {
        public Settings {
            Objects.requireNonNull(host, "host");
            prefillers = List.copyOf(prefillers);
            decoders = List.copyOf(decoders);
            token = token.clone();
            if (prefillers.isEmpty() || decoders.isEmpty()) {
                throw new IllegalArgumentException("a PD proxy needs at least one prefiller and one decoder");
            }
            if (token.length == 0) {
                throw new IllegalArgumentException("a PD proxy needs the deployment's PD token");
            }
            if (maxRequests < 1 || maxTokens < 1) {
                throw new IllegalArgumentException("maxRequests and maxTokens must be at least 1");
            }
        }
    }

    /** A worker the proxy sends to, and what it has in flight there. */
    private static final class Endpoint {
        final String address;
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicLong failures = new AtomicLong();
        volatile PdWorkerApi.ReceiverSpec receiver; // decoders only, read from their /status

        Endpoint(String address) {
            this.address = address;
        }
    }

    private final Settings settings;
    private final JsonHttpServer http;
    private final PdNoticeBoard board;
    private final PdNoticeServer notices;
    private final HttpClient client;
    private final List<Endpoint> prefillers;
    private final List<Endpoint> decoders;
    private final Semaphore slots;
    private final AtomicLong sequence = new AtomicLong();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong failedRequests = new AtomicLong();
    private final AtomicLong prefillFailures = new AtomicLong();
    private final AtomicLong decoderFailovers = new AtomicLong();
    private final AtomicLong busyRefusals = new AtomicLong();
    private final AtomicLong receiverRereads = new AtomicLong();
    private final String workerAuthorization;

    private PdProxy(Settings s, JsonHttpServer http, PdNoticeBoard board, PdNoticeServer notices) {
        this.settings = s;
        this.http = http;
        this.board = board;
        this.notices = notices;
        this.client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        this.prefillers = s.prefillers().stream().map(Endpoint::new).toList();
        this.decoders = s.decoders().stream().map(Endpoint::new).toList();
        this.slots = new Semaphore(s.maxRequests());
        this.workerAuthorization = PdWorkerServer.authorization(s.token());
    }

    /** Binds the HTTP API and the notice port and starts serving. */
    public static PdProxy start(Settings s) throws IOException {
        for (String w : concat(s.prefillers(), s.decoders())) {
            parseAddress(w);
        }
        PdNoticeBoard board = new PdNoticeBoard(s.maxRequests());
        PdNoticeServer notices = new PdNoticeServer(s.host(), s.noticePort(), s.token(), s.workerTimeout(), board);
        JsonHttpServer http;
        try {
            http = JsonHttpServer.bind(new InetSocketAddress(s.host(), s.httpPort()), s.maxRequests() + 4,
                    PdWorkerServer.MAX_BODY_BYTES, (route, status) -> { });
        } catch (IOException | RuntimeException e) {
            notices.close();
            throw e;
        }
        PdProxy proxy = new PdProxy(s, http, board, notices);
        http.post("/generate", proxy::generate);
        http.get("/status", proxy::status);
        http.get("/health", () -> Map.of("status", "ok"));
        http.start();
        return proxy;
    }

    /** {@code host:port}, checked. */
    static InetSocketAddress parseAddress(String address) {
        int colon = address.lastIndexOf(':');
        try {
            int port = Integer.parseInt(address.substring(colon + 1));
            if (colon < 1 || port < 1 || port > 65535) {
                throw new NumberFormatException();
            }
            return InetSocketAddress.createUnresolved(address.substring(0, colon), port);
        } catch (NumberFormatException | IndexOutOfBoundsException e) {
            throw new IllegalArgumentException("a worker address is host:port (port 1..65535), got '" + address + "'");
        }
    }

    // ---- a request --------------------------------------------------------------------------------

    private Object generate(JsonBody body) {
        int[] prompt = body.tokens("prompt_token_ids");
        Object max = body.fields().get("max_tokens");
        if (!(max instanceof Long n) || n < 1 || n > settings.maxTokens()) {
            throw new BadRequestException("field \"max_tokens\" must be an integer 1.." + settings.maxTokens());
        }
        if (prompt.length == 0) {
            throw new BadRequestException("field \"prompt_token_ids\" is empty: send the prompt's token ids");
        }
        boolean logits = body.optionalBoolean("return_logits").orElse(false);
        if (!slots.tryAcquire()) {
            busyRefusals.incrementAndGet();
            throw new BadRequestException(503, "busy: " + settings.maxRequests() + " requests are in flight (--max-requests)");
        }
        requests.incrementAndGet();
        try {
            Map<String, Object> answer = serve(prompt, (int) (long) n, logits);
            completed.incrementAndGet();
            return answer;
        } catch (RuntimeException e) {
            failedRequests.incrementAndGet();
            throw e;
        } finally {
            slots.release();
        }
    }

    private Map<String, Object> serve(int[] prompt, int maxTokens, boolean logits) {
        long started = System.nanoTime();
        String reqId = "pd-" + sequence.incrementAndGet() + "-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
        List<String> failures = new ArrayList<>();
        List<Endpoint> decoderOrder = byLoad(decoders);
        Endpoint decoder = null;
        PdWorkerApi.ReceiverSpec receiver = null;
        for (Endpoint d : decoderOrder) {
            try {
                receiver = receiverOf(d);
                decoder = d;
                break;
            } catch (IOException | RuntimeException e) {
                d.failures.incrementAndGet();
                failures.add("decoder " + d.address + ": " + e.getMessage());
            }
        }
        if (decoder == null) {
            throw new BadRequestException(502, "no decoder answered: " + String.join("; ", failures));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("req_id", reqId);
        Endpoint prefiller = byLoad(prefillers).getFirst();
        out.put("prefiller", prefiller.address);
        boolean waiting = board.expect(reqId, receiver.ranks());
        long prefillStarted = System.nanoTime();
        Optional<PdWorkerApi.PrefillReply> prefilled = Optional.empty();
        prefiller.inFlight.incrementAndGet();
        try {
            Map<String, Object> r = post(prefiller, "/prefill", new PdWorkerApi.PrefillCall(reqId, prompt, receiver).json());
            prefilled = Optional.of(PdWorkerApi.PrefillReply.of(r));
            if (prefilled.get().failedChunks() > 0) {
                // Its PD ports may have moved (a decoder restarted on free ports answers as before): read them again.
                decoder.receiver = null;
                receiverRereads.incrementAndGet();
            }
        } catch (RequestRefused e) {
            board.forget(reqId);
            throw new BadRequestException("the prefiller refused the request: " + e.getMessage());
        } catch (IOException | RuntimeException e) {
            prefiller.failures.incrementAndGet();
            prefillFailures.incrementAndGet();
            failures.add("prefiller " + prefiller.address + ": " + e.getMessage());
            LOG.log(System.Logger.Level.WARNING, "PD proxy: prefiller {0} failed on {1}: {2}; the decoder computes the "
                    + "prompt", prefiller.address, reqId, e.getMessage());
        } finally {
            prefiller.inFlight.decrementAndGet();
        }
        long prefillDone = System.nanoTime();
        boolean noticed = false;
        if (waiting && prefilled.isPresent()) {
            noticed = board.await(reqId, settings.noticeTimeout());
        } else {
            board.forget(reqId);
        }
        long noticeDone = System.nanoTime();
        prefilled.ifPresent(p -> out.put("prefill", p.json()));
        out.put("noticed", noticed);

        PdWorkerApi.DecodeCall call = new PdWorkerApi.DecodeCall(reqId, prompt, maxTokens, logits);
        List<Endpoint> order = new ArrayList<>(List.of(decoder));
        byLoad(decoders).stream().filter(d -> !order.contains(d)).forEach(order::add);
        for (Endpoint d : order) {
            long sent = System.nanoTime();
            d.inFlight.incrementAndGet();
            try {
                PdWorkerApi.DecodeReply reply = PdWorkerApi.DecodeReply.of(post(d, "/decode", call.json()));
                long done = System.nanoTime();
                out.put("decoder", d.address);
                out.put("token_ids", PdWorkerApi.tokenList(reply.tokens()));
                Map<String, Object> decode = reply.json();
                decode.remove("token_ids");
                out.put("decode", decode);
                Map<String, Object> t = new LinkedHashMap<>();
                t.put("prefill", ms(prefillDone - prefillStarted));
                t.put("notice_wait", ms(noticeDone - prefillDone));
                t.put("decode", ms(done - sent));
                t.put("ttft", ms(sent - started) + reply.ttftMs());
                t.put("total", ms(done - started));
                out.put("timings_ms", t);
                if (!failures.isEmpty()) {
                    out.put("failures", failures);
                }
                return out;
            } catch (RequestRefused e) {
                throw new BadRequestException("the decoder refused the request: " + e.getMessage());
            } catch (IOException | RuntimeException e) {
                d.failures.incrementAndGet();
                d.receiver = null; // read its ports again once it answers
                failures.add("decoder " + d.address + ": " + e.getMessage());
                if (d != order.getLast()) {
                    decoderFailovers.incrementAndGet();
                }
                LOG.log(System.Logger.Level.WARNING, "PD proxy: decoder {0} failed on {1}: {2}", d.address, reqId,
                        e.getMessage());
            } finally {
                d.inFlight.decrementAndGet();
            }
        }
        throw new BadRequestException(502, "every decoder failed on " + reqId + ": " + String.join("; ", failures));
    }

    private PdWorkerApi.ReceiverSpec receiverOf(Endpoint decoder) throws IOException {
        PdWorkerApi.ReceiverSpec r = decoder.receiver;
        if (r != null) {
            return r;
        }
        Map<String, Object> status = get(decoder, "/status");
        Object host = status.get("pd_peer_host");
        if (!"decoder".equals(status.get("role")) || !(host instanceof String)) {
            throw new IOException("it is not a PD decoder (its /status says role " + status.get("role") + ")");
        }
        JsonBody b = new JsonBody(status);
        r = new PdWorkerApi.ReceiverSpec((String) host, b.optionalIntegers("pd_peer_init_port").orElse(List.of()),
                b.optionalIntegers("pd_peer_alloc_port").orElse(List.of()));
        decoder.receiver = r;
        return r;
    }

    private static List<Endpoint> byLoad(List<Endpoint> endpoints) {
        List<Endpoint> sorted = new ArrayList<>(endpoints);
        // Fewest in flight first; among equals, a random one (shuffle, then a stable sort).
        java.util.Collections.shuffle(sorted, ThreadLocalRandom.current());
        sorted.sort(Comparator.comparingInt(e -> e.inFlight.get()));
        return sorted;
    }

    private Map<String, Object> post(Endpoint e, String path, Map<String, Object> body) throws IOException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://" + e.address + path)).timeout(settings.workerTimeout())
                .header("Authorization", workerAuthorization).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Json.write(body))).build();
        return send(request);
    }

    private Map<String, Object> get(Endpoint e, String path) throws IOException {
        return send(HttpRequest.newBuilder(URI.create("http://" + e.address + path)).timeout(settings.workerTimeout())
                .header("Authorization", workerAuthorization).GET().build());
    }

    private Map<String, Object> send(HttpRequest request) throws IOException {
        HttpResponse<String> response;
        try {
            response = client.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        Map<String, Object> m;
        try {
            m = Json.parseObject(response.body());
        } catch (RuntimeException e) {
            throw new IOException("answered " + response.statusCode() + " with a body that is no JSON object");
        }
        if (response.statusCode() == 400) {
            throw new RequestRefused(String.valueOf(m.getOrDefault("error", m)));
        }
        if (response.statusCode() != 200) {
            throw new IOException("answered " + response.statusCode() + ": " + m.getOrDefault("error", m));
        }
        return m;
    }

    /** A worker refused the request itself (400: a token outside the vocabulary, a prompt too long): no other worker would take it. */
    private static final class RequestRefused extends IOException {
        private static final long serialVersionUID = 1L;

        RequestRefused(String message) {
            super(message);
        }
    }

    private static double ms(long nanos) {
        return nanos / 1e6;
    }

    // ---- status and lifetime -----------------------------------------------------------------------

    private Object status() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("requests", requests.get());
        m.put("completed", completed.get());
        m.put("failed", failedRequests.get());
        m.put("busy_refusals", busyRefusals.get());
        m.put("in_flight", (long) (settings.maxRequests() - slots.availablePermits()));
        m.put("prefill_failures", prefillFailures.get());
        m.put("decoder_failovers", decoderFailovers.get());
        m.put("receiver_rereads", receiverRereads.get());
        m.put("notices", board.counted());
        m.put("notices_unknown", board.unknown());
        m.put("notices_extra", board.extra());
        m.put("notice_timeouts", board.timeouts());
        m.put("notice_auth_failures", notices.authFailures());
        m.put("notice_tag_failures", notices.tagFailures());
        m.put("notice_protocol_errors", notices.protocolErrors());
        m.put("prefillers", describe(prefillers));
        m.put("decoders", describe(decoders));
        return m;
    }

    private static List<Object> describe(List<Endpoint> endpoints) {
        List<Object> out = new ArrayList<>();
        for (Endpoint e : endpoints) {
            out.add(Map.of("address", e.address, "in_flight", (long) e.inFlight.get(), "failures", e.failures.get()));
        }
        return out;
    }

    /** The HTTP API's bound address. */
    public InetSocketAddress httpAddress() {
        return http.address();
    }

    /** The bound notice port (the senders' {@code pd_proxy_port}). */
    public int noticePort() {
        return notices.port();
    }

    /** The counters {@code GET /status} answers with. */
    public Map<String, Object> statusNow() {
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) status();
        return m;
    }

    @Override
    public void close() {
        http.close();
        notices.close();
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }
}
