package lmcache4j.server.pd;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import lmcache4j.server.http.BadRequestException;
import lmcache4j.server.http.JsonHttpServer;

/**
 * The HTTP face of one PD role process (a prefiller, a decoder, or a colocated worker that does
 * both), which the proxy calls: {@code POST /prefill} ({@link PdWorkerApi.PrefillCall}),
 * {@code POST /decode} and {@code POST /generate} ({@link PdWorkerApi.DecodeCall}), and
 * {@code GET /status} (the role, the requests in flight, and whatever the role adds: a decoder's PD
 * ports, its tier's counters). The model work is the {@link Worker}'s; this class routes, checks the
 * JSON and counts.
 *
 * <p><b>Only the proxy.</b> A prefiller or decoder serves only calls that carry
 * {@link #authorization}'s bearer, which the deployment's PD token derives (the token itself never
 * crosses the wire): anyone else would make the prefiller compute, or use up the KV pushed to the
 * decoder for another request. Refused calls are answered 401 before their body is read, and counted.
 */
public final class PdWorkerServer implements AutoCloseable {
    static {
        // A prefill of a long prompt on a busy machine takes longer than the JSON server's 30 s default to
        // answer; read when the JDK's HTTP server configuration loads, so set before the first server.
        PdLimits.allowLongAnswers();
    }

    /** The largest request body: a prompt of about 100,000 token ids. */
    static final int MAX_BODY_BYTES = 1 << 20;

    /** A role's model work. A role that does not serve a call throws {@link UnsupportedOperationException}. */
    public interface Worker {
        /** {@code prefiller}, {@code decoder} or {@code colocated}. */
        String role();

        PdWorkerApi.PrefillReply prefill(PdWorkerApi.PrefillCall call);

        PdWorkerApi.DecodeReply decode(PdWorkerApi.DecodeCall call);

        /** What {@code GET /status} adds: for a decoder, its {@code pd_peer_host}, {@code pd_peer_init_port}, {@code pd_peer_alloc_port}. */
        Map<String, Object> status();
    }

    private final JsonHttpServer http;
    private final Worker worker;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicLong served = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong unauthorized;

    private PdWorkerServer(JsonHttpServer http, Worker worker, AtomicLong unauthorized) {
        this.http = http;
        this.worker = worker;
        this.unauthorized = unauthorized;
    }

    /**
     * The {@code Authorization} header a worker demands: {@code Bearer} and the hex of
     * HMAC-SHA256 keyed by the deployment's PD token over a fixed label. Over plain HTTP a header
     * seen on the network can be replayed to the workers (keep them on the deployment's network),
     * but it does not give the token away, so it opens neither the PD ports nor the notice port.
     */
    public static String authorization(byte[] token) {
        if (token.length == 0) {
            throw new IllegalArgumentException("the PD token is empty");
        }
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(token, "HmacSHA256"));
            byte[] tag = mac.doFinal("lmcache4j pd worker http v1".getBytes(StandardCharsets.US_ASCII));
            return "Bearer " + HexFormat.of().formatHex(tag);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
        }
    }

    /**
     * Serves {@code worker} on {@code address} (port 0: any free one) with {@code threads} handler slots
     * (the model work itself is the worker's to serialise).
     *
     * @param token the deployment's PD token: every call must carry {@link #authorization}{@code (token)};
     *              empty only for a colocated worker, which takes part in no PD and is open as a plain
     *              model server
     */
    public static PdWorkerServer start(InetSocketAddress address, int threads, Worker worker, Optional<byte[]> token)
            throws IOException {
        Objects.requireNonNull(worker, "worker");
        Optional<byte[]> expected = token.map(t -> authorization(t).getBytes(StandardCharsets.US_ASCII));
        AtomicLong unauthorized = new AtomicLong();
        JsonHttpServer http = JsonHttpServer.bind(address, threads, MAX_BODY_BYTES, (route, status) -> { });
        expected.ifPresent(e -> http.requireAuthorization(h -> {
            boolean ok = h != null && MessageDigest.isEqual(e, h.getBytes(StandardCharsets.US_ASCII));
            if (!ok) {
                unauthorized.incrementAndGet(); // counted before the 401 is sent, so a caller that saw it sees the count
            }
            return ok;
        }, "a PD worker serves only the PD proxy: send Authorization: Bearer TOKEN, which the deployment's PD token "
                + "(p2p_token, or deployment_secret_file's) derives"));
        PdWorkerServer s = new PdWorkerServer(http, worker, unauthorized);
        http.post("/prefill", body -> s.call(() -> worker.prefill(PdWorkerApi.PrefillCall.of(body)).json()));
        http.post("/decode", body -> s.call(() -> worker.decode(PdWorkerApi.DecodeCall.of(body)).json()));
        http.post("/generate", body -> s.call(() -> worker.decode(PdWorkerApi.DecodeCall.of(body)).json()));
        http.get("/status", s::status);
        http.get("/health", () -> Map.of("status", "ok"));
        http.start();
        return s;
    }

    private Object call(Supplier<Map<String, Object>> work) {
        inFlight.incrementAndGet();
        try {
            Map<String, Object> answer = work.get();
            served.incrementAndGet();
            return answer;
        } catch (UnsupportedOperationException e) {
            throw new BadRequestException(404, "a " + worker.role() + " does not serve this: " + e.getMessage());
        } catch (IllegalArgumentException e) {
            failed.incrementAndGet();
            throw new BadRequestException(e.getMessage());
        } catch (RuntimeException e) {
            failed.incrementAndGet();
            throw e;
        } finally {
            inFlight.decrementAndGet();
        }
    }

    private Object status() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", worker.role());
        m.put("in_flight", (long) inFlight.get());
        m.put("served", served.get());
        m.put("failed", failed.get());
        m.put("unauthorized", unauthorized.get());
        m.putAll(worker.status());
        return m;
    }

    /** The bound address. */
    public InetSocketAddress address() {
        return http.address();
    }

    /** Requests being served now. */
    public int inFlight() {
        return inFlight.get();
    }

    @Override
    public void close() {
        http.close();
    }
}
