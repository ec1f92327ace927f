package lmcache4j.server.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.function.Predicate;
import java.util.concurrent.TimeUnit;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.json.Json;
import lmcache4j.engine.json.JsonException;

/**
 * A small JSON-over-HTTP server on the JDK's own {@code jdk.httpserver} (no dependency, and it
 * works in a GraalVM native image). Each route is a method and an exact path; a POST body is one
 * JSON object of at most {@code maxBodyBytes}. Answers are JSON objects; every refusal is
 * {@code {"error": "..."}} with a 4xx status: 400 bad JSON or fields, 404 unknown path, 405 wrong
 * method, 413 body too large, 415 not UTF-8; a handler's unexpected failure is a 500, and 503 when
 * every handler slot stayed busy for {@value #SLOT_WAIT_SECONDS} s.
 *
 * <p>Slow clients cannot starve it: each exchange (reading its headers and body included) runs on a
 * virtual thread of its own, so a connection that dribbles bytes holds only that thread, and only
 * handlers (the work after a request has arrived) are limited to {@code threads} at once. The JDK
 * server's own limits close what is slow for too long; they are JVM-wide system properties, set
 * here unless the operator set them ({@code -D...} in {@code JAVA_TOOL_OPTIONS}):
 * {@code sun.net.httpserver.maxReqTime} {@value #MAX_REQUEST_SECONDS} s to receive a request,
 * {@code sun.net.httpserver.maxRspTime} {@value #MAX_RESPONSE_SECONDS} s to send an answer,
 * {@code jdk.httpserver.maxConnections} {@value #MAX_CONNECTIONS} connections at once.
 */
public final class JsonHttpServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(JsonHttpServer.class.getName());
    /** Handlers are interrupted at close; one still forwarding to a silent worker is named in a warning past this. */
    private static final Duration JOIN_BOUND = Duration.ofSeconds(10);
    static final int MAX_REQUEST_SECONDS = 30;
    static final int MAX_RESPONSE_SECONDS = 30;
    static final int MAX_CONNECTIONS = 1024;
    static final int SLOT_WAIT_SECONDS = 30;

    static {
        // Read once, when the JDK's server configuration class loads: before the first HttpServer.
        System.getProperties().putIfAbsent("sun.net.httpserver.maxReqTime", Integer.toString(MAX_REQUEST_SECONDS));
        System.getProperties().putIfAbsent("sun.net.httpserver.maxRspTime", Integer.toString(MAX_RESPONSE_SECONDS));
        System.getProperties().putIfAbsent("jdk.httpserver.maxConnections", Integer.toString(MAX_CONNECTIONS));
    }

    /** Told of every request answered: its route ({@code other} for an unknown path) and its status. */
    @FunctionalInterface
    public interface RequestCounter {
        void answered(String route, int status);
    }

    /** What a POST route does with its body; returns the object to send as JSON. */
    @FunctionalInterface
    public interface PostHandler {
        Object handle(JsonBody body);
    }

    /** What a GET route answers: a JSON-writable value, or a {@link Text}. */
    @FunctionalInterface
    public interface GetHandler {
        Object handle();
    }

    /** A GET route that reads its query parameters (decoded; the last of a repeated name wins). */
    @FunctionalInterface
    public interface QueryHandler {
        Object handle(Map<String, String> query);
    }

    /** The most query parameters a GET may carry. */
    static final int MAX_QUERY_PARAMETERS = 16;

    /** A plain-text answer (Prometheus' format) instead of JSON. */
    public record Text(String contentType, String body) {
    }

    /**
     * A route for every path under a prefix ({@code /quota/NAME}): {@code name} is the rest of the
     * (decoded) path; {@code body} the JSON object of a PUT or POST, else empty.
     */
    @FunctionalInterface
    public interface ResourceHandler {
        Object handle(String name, Optional<JsonBody> body);
    }

    private final HttpServer server;
    private final OwnedThreads threads;
    private final ExecutorService executor;
    private final Semaphore handlerSlots;
    private final int maxBodyBytes;
    private final RequestCounter requests;
    private final Map<String, PostHandler> posts = new LinkedHashMap<>();
    private final Map<String, QueryHandler> gets = new LinkedHashMap<>();
    /** POST routes that take no body. */
    private final Set<String> bodyless = new HashSet<>();
    /** method → path prefix → handler, for paths that name a resource. */
    private final Map<String, Map<String, ResourceHandler>> resources = new LinkedHashMap<>();
    /** A resource prefix → what to say when a request names nothing after it. */
    private final Map<String, String> emptyNameHints = new HashMap<>();
    /** Whether a request's {@code Authorization} header (null when absent) admits it; every request passes when null. */
    private volatile Predicate<String> authorization;
    /** What a 401 says: how to get the token this server wants. */
    private volatile String authorizationHint = "this controller needs the deployment's bearer token: send "
            + "Authorization: Bearer TOKEN, where ./lmcache4j controller --secret-file FILE --print-bearer prints "
            + "TOKEN from the controller's secret file FILE";

    private JsonHttpServer(HttpServer server, OwnedThreads threads, ExecutorService executor, int handlers, int maxBodyBytes,
                           RequestCounter requests) {
        this.server = server;
        this.threads = threads;
        this.executor = executor;
        this.handlerSlots = new Semaphore(handlers);
        this.maxBodyBytes = maxBodyBytes;
        this.requests = requests;
    }

    /**
     * Binds {@code address} (port 0: any free port); call {@link #start()} after adding routes.
     *
     * @param threads how many handlers run at once (requests still arriving do not count)
     */
    public static JsonHttpServer bind(InetSocketAddress address, int threads, int maxBodyBytes, RequestCounter requests)
            throws IOException {
        if (maxBodyBytes < 1 || threads < 1) {
            throw new IllegalArgumentException("max body bytes and threads must be at least 1, were " + maxBodyBytes + ", "
                    + threads);
        }
        HttpServer server = HttpServer.create(address, 128);
        OwnedThreads owned = new OwnedThreads();
        ExecutorService executor = Executors.newThreadPerTaskExecutor(owned.virtualFactory("controller-http"));
        server.setExecutor(executor);
        JsonHttpServer s = new JsonHttpServer(server, owned, executor, threads, maxBodyBytes, Objects.requireNonNull(requests));
        server.createContext("/", s::serve);
        return s;
    }

    public JsonHttpServer post(String path, PostHandler handler) {
        posts.put(path, handler);
        return this;
    }

    public JsonHttpServer get(String path, GetHandler handler) {
        gets.put(path, query -> handler.handle());
        return this;
    }

    /** A POST route that takes no body (LMCache's {@code /clear-cache}); a body sent is ignored. */
    public JsonHttpServer postWithoutBody(String path, GetHandler handler) {
        posts.put(path, body -> handler.handle());
        bodyless.add(path);
        return this;
    }

    /** A GET route that reads its query string ({@code ?offset=0&limit=10}). */
    public JsonHttpServer getWithQuery(String path, QueryHandler handler) {
        gets.put(path, handler);
        return this;
    }

    /** Serves {@code method} (GET, PUT, POST or DELETE) for every path that starts with {@code prefix}. */
    public JsonHttpServer resource(String method, String prefix, ResourceHandler handler) {
        if (!List.of("GET", "PUT", "POST", "DELETE").contains(method) || !prefix.endsWith("/")) {
            throw new IllegalArgumentException("a resource route takes GET, PUT, POST or DELETE under a prefix ending in /,"
                    + " got " + method + " " + prefix);
        }
        resources.computeIfAbsent(method, m -> new LinkedHashMap<>()).put(prefix, Objects.requireNonNull(handler));
        return this;
    }

    /**
     * What a request to {@code prefix} itself, naming no resource, is told besides the route's form
     * ({@code /api/quota/NAME}): for example which name stands for an empty one.
     */
    public JsonHttpServer emptyNameHint(String prefix, String hint) {
        emptyNameHints.put(prefix, Objects.requireNonNull(hint));
        return this;
    }

    /**
     * Requires every request's {@code Authorization} header to pass {@code accepts}; others are
     * answered 401 before their body is read.
     */
    public JsonHttpServer requireAuthorization(Predicate<String> accepts) {
        this.authorization = Objects.requireNonNull(accepts, "accepts");
        return this;
    }

    /** As {@link #requireAuthorization(Predicate)}, with a 401 that says {@code hint} (how to get the token). */
    public JsonHttpServer requireAuthorization(Predicate<String> accepts, String hint) {
        this.authorizationHint = Objects.requireNonNull(hint, "hint");
        return requireAuthorization(accepts);
    }

    public void start() {
        server.start();
    }

    /** The bound address (with the real port). */
    public InetSocketAddress address() {
        return server.getAddress();
    }

    private void serve(HttpExchange exchange) throws IOException {
        String path = exchange.getRequestURI().getPath();
        String method = exchange.getRequestMethod();
        Optional<Map.Entry<String, ResourceHandler>> resource = resourceFor(method, path);
        String label = posts.containsKey(path) || gets.containsKey(path) ? path
                : resource.map(r -> r.getKey() + "*").orElse("other");
        int status;
        try {
            Predicate<String> auth = authorization;
            if (auth != null && !auth.test(exchange.getRequestHeaders().getFirst("Authorization"))) {
                exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"lmcache4j\"");
                throw new BadRequestException(401, authorizationHint);
            }
            if (resource.isPresent() && !(gets.containsKey(path) && method.equals("GET"))) {
                String name = path.substring(resource.get().getKey().length()); // getPath() has decoded it already
                Optional<JsonBody> body = method.equals("PUT") || method.equals("POST")
                        ? Optional.of(new JsonBody(readObject(exchange))) : Optional.empty();
                ResourceHandler h = resource.get().getValue();
                status = send(exchange, 200, inSlot(() -> h.handle(name, body)));
            } else {
                status = exact(exchange, method, path);
            }
        } catch (BadRequestException e) {
            status = error(exchange, e.status(), e.getMessage());
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "HTTP " + method + " " + path + " failed", e);
            status = error(exchange, 500, "internal error: " + e);
        } finally {
            exchange.close();
        }
        requests.answered(label, status);
    }

    /** A route of an exact path: its answer's status. */
    private int exact(HttpExchange exchange, String method, String path) throws IOException {
        return switch (method) {
            case "GET", "HEAD" -> {
                QueryHandler g = gets.get(path);
                if (g == null) {
                    throw refusal(path);
                }
                Map<String, String> query = query(exchange.getRequestURI().getRawQuery());
                yield send(exchange, 200, inSlot(() -> g.handle(query)));
            }
            case "POST" -> {
                PostHandler p = posts.get(path);
                if (p == null) {
                    throw refusal(path);
                }
                // The body is read before a slot is taken: slow bodies hold none.
                JsonBody body = new JsonBody(bodyless.contains(path) ? Map.of() : readObject(exchange));
                yield send(exchange, 200, inSlot(() -> p.handle(body)));
            }
            default -> {
                if (isResourcePrefix(path)) {
                    throw refusal(path);
                }
                throw new BadRequestException(405, "method " + method.substring(0, Math.min(method.length(), 16))
                        + " not allowed on " + path);
            }
        };
    }

    private boolean isResourcePrefix(String path) {
        return resources.values().stream().anyMatch(byPrefix -> byPrefix.containsKey(path));
    }

    private Optional<Map.Entry<String, ResourceHandler>> resourceFor(String method, String path) {
        Map<String, ResourceHandler> byPrefix = resources.get(method.equals("HEAD") ? "GET" : method);
        if (byPrefix == null) {
            return Optional.empty();
        }
        return byPrefix.entrySet().stream().filter(e -> path.startsWith(e.getKey()) && path.length() > e.getKey().length())
                .findFirst();
    }

    /** {@code a=1&b=2}, percent-decoded; at most {@value #MAX_QUERY_PARAMETERS} parameters. */
    static Map<String, String> query(String raw) {
        Map<String, String> out = new LinkedHashMap<>();
        if (raw == null || raw.isEmpty()) {
            return out;
        }
        String[] pairs = raw.split("&", MAX_QUERY_PARAMETERS + 2);
        if (pairs.length > MAX_QUERY_PARAMETERS) {
            throw new BadRequestException("at most " + MAX_QUERY_PARAMETERS + " query parameters");
        }
        for (String pair : pairs) {
            int eq = pair.indexOf('=');
            try {
                out.put(URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8),
                        eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            } catch (IllegalArgumentException e) {
                throw new BadRequestException("a malformed query string: " + e.getMessage());
            }
        }
        return out;
    }

    /** Runs a handler in one of the {@code threads} slots; 503 when none frees up in time. */
    private Object inSlot(GetHandler handler) {
        boolean acquired;
        try {
            acquired = handlerSlots.tryAcquire(SLOT_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BadRequestException(503, "the server is stopping");
        }
        if (!acquired) {
            throw new BadRequestException(503, "busy: every one of this server's HTTP handler slots stayed taken for "
                    + SLOT_WAIT_SECONDS + " s; try again");
        }
        try {
            return handler.handle();
        } finally {
            handlerSlots.release();
        }
    }

    private BadRequestException refusal(String path) {
        if (posts.containsKey(path)) {
            return new BadRequestException(405, path + (bodyless.contains(path) ? " takes POST (no body)" : " takes POST with a JSON object"));
        }
        if (isResourcePrefix(path)) {
            List<String> methods = new ArrayList<>();
            resources.forEach((m, byPrefix) -> {
                if (byPrefix.containsKey(path)) {
                    methods.add(m);
                }
            });
            return new BadRequestException(404, path + " names nothing: " + String.join(", ", methods) + " " + path + "NAME"
                    + Optional.ofNullable(emptyNameHints.get(path)).map(h -> " (" + h + ")").orElse(""));
        }
        if (gets.containsKey(path)) {
            return new BadRequestException(405, path + " takes GET");
        }
        return new BadRequestException(404, "no such path; the API has " + String.join(", ", routes()));
    }

    private Iterable<String> routes() {
        List<String> all = new ArrayList<>();
        gets.keySet().forEach(p -> all.add("GET " + p));
        posts.keySet().forEach(p -> all.add("POST " + p));
        resources.forEach((method, byPrefix) -> byPrefix.keySet().forEach(p -> all.add(method + " " + p + "NAME")));
        return all;
    }

    private Map<String, Object> readObject(HttpExchange exchange) throws IOException {
        String declared = exchange.getRequestHeaders().getFirst("Content-Length");
        if (declared != null) {
            try {
                if (Long.parseLong(declared.trim()) > maxBodyBytes) {
                    throw tooLarge();
                }
            } catch (NumberFormatException e) {
                throw new BadRequestException("Content-Length is not a number");
            }
        }
        byte[] body = readBounded(exchange.getRequestBody());
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(body)).toString();
        } catch (CharacterCodingException e) {
            throw new BadRequestException(415, "the body is not UTF-8");
        }
        if (text.isBlank()) {
            throw new BadRequestException("the body is empty; send a JSON object");
        }
        try {
            return Json.parseObject(text);
        } catch (JsonException e) {
            throw new BadRequestException("bad JSON: " + e.getMessage());
        }
    }

    private byte[] readBounded(InputStream in) throws IOException {
        byte[] buf = new byte[Math.min(maxBodyBytes + 1, 64 * 1024)];
        int n = 0;
        while (true) {
            if (n == buf.length) {
                if (buf.length > maxBodyBytes) {
                    throw tooLarge();
                }
                buf = Arrays.copyOf(buf, (int) Math.min((long) maxBodyBytes + 1, buf.length * 2L));
            }
            int r = in.read(buf, n, buf.length - n);
            if (r < 0) {
                break;
            }
            n += r;
            if (n > maxBodyBytes) {
                throw tooLarge();
            }
        }
        return Arrays.copyOf(buf, n);
    }

    private BadRequestException tooLarge() {
        return new BadRequestException(413, "the body is larger than " + maxBodyBytes + " bytes");
    }

    private static int send(HttpExchange exchange, int status, Object answer) throws IOException {
        String contentType = "application/json";
        String text;
        if (answer instanceof Text t) {
            contentType = t.contentType();
            text = t.body();
        } else {
            text = Json.write(answer) + "\n";
        }
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", contentType);
        boolean head = "HEAD".equals(exchange.getRequestMethod());
        exchange.sendResponseHeaders(status, head ? -1 : bytes.length);
        if (!head) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
        return status;
    }

    private static int error(HttpExchange exchange, int status, String message) {
        try {
            // The rest of an unread body is discarded by close(); the answer goes out first.
            return send(exchange, status, Map.of("error", message));
        } catch (IOException e) {
            return status; // the client went away
        }
    }

    @Override
    public void close() {
        server.stop(0); // joins the JDK's dispatcher thread
        executor.shutdownNow();
        threads.join(JOIN_BOUND);
    }
}
