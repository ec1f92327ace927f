package lmcache4j.tests.controller;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import lmcache4j.engine.json.Json;

/** The controller's HTTP JSON API as a router or an operator uses it, with bounded waits for a condition. */
final class ControllerHttp {
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final URI base;
    private final Optional<String> bearer;

    ControllerHttp(int port) {
        this(port, Optional.empty());
    }

    /** A client of a secured controller, sending {@code Authorization: Bearer TOKEN} with every request. */
    ControllerHttp(int port, Optional<String> bearer) {
        this.bearer = bearer;
        this.base = URI.create("http://127.0.0.1:" + port);
    }

    /** {@code POST /lookup {"tokens": [...]}}: layout_info, best_instance, best_tokens, ... */
    Map<String, Object> lookup(int[] tokens) throws IOException, InterruptedException {
        String body = "{\"tokens\":[" + Arrays.stream(tokens).mapToObj(Integer::toString).collect(Collectors.joining(",")) + "]}";
        return json(send(HttpRequest.newBuilder(base.resolve("/lookup")).POST(HttpRequest.BodyPublishers.ofString(body))));
    }

    /** {@code GET /instances}. */
    Map<String, Object> instances() throws IOException, InterruptedException {
        return json(send(HttpRequest.newBuilder(base.resolve("/instances")).GET()));
    }

    /** {@code GET /metrics}: Prometheus text. */
    String metrics() throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(base.resolve("/metrics")).GET());
    }

    /** The value of the first Prometheus sample named {@code name} (any labels), or -1 when absent. */
    double metric(String name) throws IOException, InterruptedException {
        for (String line : metrics().lines().toList()) {
            if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
                return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return -1;
    }

    /** Polls {@code /lookup} of {@code tokens} until {@code until} holds; fails with the last answer after {@code within}. */
    Map<String, Object> awaitLookup(int[] tokens, Predicate<Map<String, Object>> until, Duration within, String what)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        Map<String, Object> last = lookup(tokens);
        while (!until.test(last)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("lookup never showed " + what + " within " + within + "; last answer: " + last);
            }
            Thread.sleep(100);
            last = lookup(tokens);
        }
        return last;
    }

    /** Waits until the API answers; fails with the process's output when it exits or the time runs out. */
    void awaitUp(Duration within, ChildProcess process) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            try {
                instances();
                return;
            } catch (IOException notYet) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new AssertionError("the controller's HTTP API did not come up at " + base + "\n" + process.output());
                }
                Thread.sleep(100);
            }
        }
    }

    /** The tokens a lookup answer credits {@code instance} with (layout_info[instance] = [location, tokens]), 0 if absent. */
    @SuppressWarnings("unchecked")
    static long tokensOf(Map<String, Object> answer, String instance) {
        Object layout = ((Map<String, Object>) answer.get("layout_info")).get(instance);
        return layout == null ? 0 : (Long) ((List<Object>) layout).get(1);
    }

    private String send(HttpRequest.Builder request) throws IOException, InterruptedException {
        bearer.ifPresent(token -> request.header("Authorization", "Bearer " + token));
        HttpResponse<String> r = client.send(request.timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException(r.request().uri() + " answered " + r.statusCode() + ": " + r.body());
        }
        return r.body();
    }

    private static Map<String, Object> json(String body) {
        return Json.parseObject(body);
    }
}
