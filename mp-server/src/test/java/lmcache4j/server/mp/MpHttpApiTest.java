package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.engine.json.Json;

/** The MP server's HTTP port, as LMCache's: health, status, metrics, clear, quotas; both path spellings. */
@Timeout(60)
class MpHttpApiTest {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<String> send(MpServer server, String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.httpPort() + path))
                .timeout(Duration.ofSeconds(10));
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> json(HttpResponse<String> r) {
        return (Map<String, Object>) Json.parse(r.body());
    }

    @Test
    void healthStatusMetricsAndClearAnswerOnBothSpellings() throws Exception {
        try (MpServer server = MpServer.start(MpServerSettings.loopback(8L << 20))) {
            for (String prefix : new String[] {"/api", ""}) {
                assertEquals("healthy", json(send(server, "GET", prefix + "/healthcheck", null)).get("status"));
                Map<String, Object> status = json(send(server, "GET", prefix + "/status", null));
                assertEquals("engine_driven", status.get("supported_transfer_mode"));
                assertEquals(256L, ((Number) status.get("chunk_size")).longValue());
                HttpResponse<String> cleared = send(server, "POST", prefix + "/clear-cache", null);
                assertEquals(200, cleared.statusCode(), cleared.body());
            }
            String metrics = send(server, "GET", "/metrics", null).body();
            assertTrue(metrics.contains("lmcache4j_mp_pool_bytes 8388608"), metrics);
            assertTrue(metrics.contains("lmcache4j_mp_http_requests_total{path=\"/api/healthcheck\",status=\"200\"} 1"), metrics);
            assertFalse(metrics.contains("lmcache4j_controller_"), "no controller series: " + metrics);
            assertEquals(404, send(server, "GET", "/api/nothing", null).statusCode());
        }
    }

    @Test
    void quotasAreSetReadAndRemovedAndBadOnesAreRefused() throws Exception {
        try (MpServer server = MpServer.start(MpServerSettings.loopback(8L << 20))) {
            HttpResponse<String> put = send(server, "PUT", "/api/quota/tenant-a", "{\"limit_gb\": 0.5}");
            assertEquals(200, put.statusCode(), put.body());
            Map<String, Object> got = json(send(server, "GET", "/api/quota/tenant-a", null));
            assertEquals(0.5, ((Number) got.get("limit_gb")).doubleValue());
            assertEquals(Boolean.TRUE, got.get("exists"));
            assertEquals(200, send(server, "PUT", "/quota/_default", "{\"limit_gb\": 1}").statusCode());
            Map<String, Object> all = json(send(server, "GET", "/api/quota", null));
            assertEquals(2, ((Map<?, ?>) all.get("users")).size(), all.toString());
            assertEquals("removed", json(send(server, "DELETE", "/api/quota/tenant-a", null)).get("status"));
            assertEquals("not_found", json(send(server, "DELETE", "/api/quota/tenant-a", null)).get("status"));
            assertEquals(400, send(server, "PUT", "/api/quota/x", "{\"limit_gb\": -1}").statusCode());
            assertEquals(400, send(server, "PUT", "/api/quota/x", "{\"limit_gb\": \"lots\"}").statusCode());
            assertEquals(400, send(server, "PUT", "/api/quota/x", "not json").statusCode());
            assertEquals(400, send(server, "PUT", "/api/quota/a%40b", "{\"limit_gb\": 1}").statusCode(), "a salt with @");
            assertEquals(400, send(server, "GET", "/api/quota/" + "s".repeat(200), null).statusCode(), "a salt too long");
        }
    }

    /** The refusals say what to send: the empty salt's name, and that clear-cache takes no body. */
    @Test
    void refusalsNameTheRequestToSendInstead() throws Exception {
        try (MpServer server = MpServer.start(MpServerSettings.loopback(8L << 20))) {
            for (String prefix : new String[] {"/api", ""}) {
                for (String method : new String[] {"PUT", "GET", "DELETE"}) {
                    HttpResponse<String> empty = send(server, method, prefix + "/quota/", "PUT".equals(method) ? "{\"limit_gb\": 1}" : null);
                    assertEquals(404, empty.statusCode(), method + " " + empty.body());
                    assertTrue(empty.body().contains(prefix + "/quota/NAME") && empty.body().contains(prefix + "/quota/_default"),
                            method + " " + prefix + "/quota/: " + empty.body());
                }
                HttpResponse<String> get = send(server, "GET", prefix + "/clear-cache", null);
                assertEquals(405, get.statusCode(), get.body());
                assertEquals(Map.of("error", prefix + "/clear-cache takes POST (no body)"), json(get));
            }
        }
    }
}
