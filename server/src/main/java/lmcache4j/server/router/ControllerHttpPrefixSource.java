package lmcache4j.server.router;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import lmcache4j.engine.json.Json;
import lmcache4j.engine.json.JsonException;

/**
 * The controller's answer over its HTTP API, for a router in another process: {@code POST /lookup}
 * with {@code {"tokens": [...]}}, read from {@code layout_info} ({@code instance → [location, tokens]}).
 * Any failure (refused, slow past the timeout, a status other than 200, a body of another shape) is
 * a {@link RouterLookupException}, so the router falls back to load and turn.
 */
public final class ControllerHttpPrefixSource implements PrefixSource {
    /** The largest answer read: a layout for thousands of instances fits many times over. */
    static final int MAX_ANSWER_BYTES = 4 << 20;

    private final HttpClient client;
    private final URI lookup;
    private final Duration timeout;

    /**
     * @param controller the controller's HTTP address, such as {@code http://127.0.0.1:9000}
     * @param timeout    how long one lookup may take
     */
    public ControllerHttpPrefixSource(URI controller, Duration timeout) {
        Objects.requireNonNull(controller, "controller");
        if (!"http".equals(controller.getScheme()) || controller.getHost() == null) {
            throw new IllegalArgumentException("the controller's HTTP address must be http://HOST:PORT, got '" + controller + "'");
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("the lookup timeout must be positive, got " + timeout);
        }
        this.lookup = controller.resolve("/lookup");
        this.timeout = timeout;
        this.client = HttpClient.newBuilder().connectTimeout(timeout).version(HttpClient.Version.HTTP_1_1).build();
    }

    @Override
    public Map<String, Integer> cachedPrefixes(int[] tokens) {
        StringBuilder body = new StringBuilder(tokens.length * 7 + 16).append("{\"tokens\":[");
        for (int i = 0; i < tokens.length; i++) {
            body.append(i == 0 ? "" : ",").append(tokens[i]);
        }
        HttpRequest request = HttpRequest.newBuilder(lookup).timeout(timeout).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.append("]}").toString())).build();
        HttpResponse<byte[]> response;
        try {
            response = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new RouterLookupException("the controller's /lookup at " + lookup + " failed: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RouterLookupException("interrupted while asking " + lookup, e);
        }
        if (response.statusCode() != 200) {
            throw new RouterLookupException("the controller's /lookup answered HTTP " + response.statusCode());
        }
        if (response.body().length > MAX_ANSWER_BYTES) {
            throw new RouterLookupException("the controller's /lookup answered " + response.body().length + " bytes");
        }
        return parse(new String(response.body(), StandardCharsets.UTF_8));
    }

    /** {@code layout_info} of a /lookup answer: instance → tokens. */
    static Map<String, Integer> parse(String answer) {
        Map<String, Object> fields;
        try {
            fields = Json.parseObject(answer);
        } catch (JsonException e) {
            throw new RouterLookupException("the controller's /lookup answer is not JSON: " + e.getMessage(), e);
        }
        if (!(fields.get("layout_info") instanceof Map<?, ?> layout)) {
            throw new RouterLookupException("the controller's /lookup answer has no layout_info object");
        }
        Map<String, Integer> out = new HashMap<>();
        for (Map.Entry<?, ?> e : layout.entrySet()) {
            if (!(e.getValue() instanceof List<?> pair) || pair.size() != 2 || !(pair.get(1) instanceof Long n)
                    || n < 0 || n > Integer.MAX_VALUE) {
                throw new RouterLookupException("layout_info of instance " + e.getKey() + " is not [location, tokens]");
            }
            out.put((String) e.getKey(), n.intValue());
        }
        return out;
    }
}
