package lmcache4j.server.mp;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.engine.zmq.ConnectionGuard;
import lmcache4j.server.http.BadRequestException;
import lmcache4j.server.http.JsonBody;
import lmcache4j.server.http.JsonHttpServer;

/**
 * The MP server's HTTP port, as LMCache's MP server has one ({@code http_apis/*_api.py}): health,
 * status, Prometheus metrics, clearing the cache, and per-{@code cache_salt} quotas. LMCache's
 * paths carry an {@code /api} prefix ({@code /metrics} does not); both spellings are served. The
 * salt {@code ""} is written {@code _default} in a path.
 */
final class MpHttpApi implements AutoCloseable {
    private static final int HANDLERS = 4;
    private static final int MAX_BODY_BYTES = 64 * 1024;

    private final JsonHttpServer http;

    private MpHttpApi(JsonHttpServer http) {
        this.http = http;
    }

    static MpHttpApi start(MpServerSettings settings, MpServer server) throws IOException {
        Map<String, LongAdder> answered = new ConcurrentHashMap<>(); // by route and status: a bounded set of labels
        JsonHttpServer http = JsonHttpServer.bind(new InetSocketAddress(settings.httpHost(), settings.httpPort()), HANDLERS,
                MAX_BODY_BYTES, (route, status) -> answered.computeIfAbsent("{path=\"" + route + "\",status=\"" + status
                        + "\"}", k -> new LongAdder()).increment());
        for (String prefix : new String[] {"/api", ""}) {
            http.get(prefix + "/healthcheck", () -> Map.of("status", "healthy"));
            http.get(prefix + "/status", () -> server.status().toJson());
            http.postWithoutBody(prefix + "/clear-cache", () -> {
                server.clear();
                return Map.of("status", "ok");
            });
            http.get(prefix + "/quota", () -> Map.of("users", server.onLoop(() -> server.quotas().all())));
            http.resource("GET", prefix + "/quota/", (salt, body) -> server.onLoop(() -> server.quotas().describe(salt(salt))));
            http.resource("PUT", prefix + "/quota/", (salt, body) -> setQuota(server, salt(salt), body));
            http.emptyNameHint(prefix + "/quota/", "the salt \"\" is named _default: " + prefix + "/quota/_default");
            http.resource("DELETE", prefix + "/quota/", (salt, body) -> {
                boolean removed = server.onLoop(() -> server.quotas().remove(salt(salt)));
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("cache_salt", salt);
                out.put("status", removed ? "removed" : "not_found");
                return out;
            });
        }
        http.get("/metrics", () -> new JsonHttpServer.Text("text/plain; version=0.0.4",
                server.status().prometheus() + connectionCounts(server.connections()) + httpCounts(answered)));
        http.start();
        return new MpHttpApi(http);
    }

    /** {@code lmcache4j_mp_connections*}: the ROUTER's connections as its guard counts them. */
    private static String connectionCounts(ConnectionGuard.Counts c) {
        return "# TYPE lmcache4j_mp_connections gauge\nlmcache4j_mp_connections " + c.open() + "\n"
                + "# TYPE lmcache4j_mp_connections_handshaking gauge\nlmcache4j_mp_connections_handshaking "
                + c.handshaking() + "\n"
                + "# TYPE lmcache4j_mp_connections_refused_total counter\n"
                + "lmcache4j_mp_connections_refused_total{limit=\"connections\"} " + c.refusedTotal() + "\n"
                + "lmcache4j_mp_connections_refused_total{limit=\"per_host\"} " + c.refusedPerHost() + "\n"
                + "lmcache4j_mp_connections_refused_total{limit=\"handshaking\"} " + c.refusedHandshaking() + "\n"
                + "# TYPE lmcache4j_mp_handshake_timeouts_total counter\nlmcache4j_mp_handshake_timeouts_total "
                + c.timedOut() + "\n";
    }

    /** {@code lmcache4j_mp_http_requests_total}, one series per route and status. */
    private static String httpCounts(Map<String, LongAdder> answered) {
        StringBuilder sb = new StringBuilder("# TYPE lmcache4j_mp_http_requests_total counter\n");
        new TreeMap<>(answered).forEach((labels, n) ->
                sb.append("lmcache4j_mp_http_requests_total").append(labels).append(' ').append(n.sum()).append('\n'));
        return sb.toString();
    }

    /** {@code _default} names the salt {@code ""}; any other name must be a valid salt. */
    private static String salt(String name) {
        String salt = name.equals("_default") ? "" : name;
        Optional<String> wrong = MpQuotas.checkSalt(salt);
        if (wrong.isPresent()) {
            throw new BadRequestException(wrong.get());
        }
        return salt;
    }

    private static Object setQuota(MpServer server, String salt, Optional<JsonBody> body) {
        Object limit = body.orElseThrow().fields().get("limit_gb");
        if (!(limit instanceof Number n) || !Double.isFinite(n.doubleValue()) || n.doubleValue() < 0) {
            throw new BadRequestException("limit_gb must be a finite number >= 0, got " + limit);
        }
        double gb = n.doubleValue();
        if (!server.onLoop(() -> server.quotas().set(salt, gb))) {
            throw new BadRequestException("this server keeps at most " + MpQuotas.MAX_QUOTAS + " quotas; remove one first");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("cache_salt", salt.isEmpty() ? "_default" : salt);
        out.put("limit_gb", gb);
        out.put("status", "ok");
        return out;
    }

    int port() {
        return http.address().getPort();
    }

    @Override
    public void close() {
        http.close();
    }
}
