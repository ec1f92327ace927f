package lmcache4j.server.pd;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import lmcache4j.server.http.BadRequestException;
import lmcache4j.server.http.JsonHttpServer;

/**
 * The HTTP face of one PD role process (a prefiller, a decoder, or a colocated worker that does
 * both), which the proxy calls: {@code POST /prefill} ({@link PdWorkerApi.PrefillCall}),
 * {@code POST /decode} and {@code POST /generate} ({@link PdWorkerApi.DecodeCall}), and
 * {@code GET /status} (the role, the requests in flight, and whatever the role adds: a decoder's PD
 * ports, its tier's counters). The model work is the {@link Worker}'s; this class routes, checks the
 * JSON and counts.
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

    private PdWorkerServer(JsonHttpServer http, Worker worker) {
        this.http = http;
        this.worker = worker;
    }

    /**
     * Serves {@code worker} on {@code address} (port 0: any free one) with {@code threads} handler slots
     * (the model work itself is the worker's to serialise).
     */
    public static PdWorkerServer start(InetSocketAddress address, int threads, Worker worker) throws IOException {
        Objects.requireNonNull(worker, "worker");
        JsonHttpServer http = JsonHttpServer.bind(address, threads, MAX_BODY_BYTES, (route, status) -> { });
        PdWorkerServer s = new PdWorkerServer(http, worker);
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
