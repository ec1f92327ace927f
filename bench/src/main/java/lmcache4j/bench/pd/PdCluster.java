package lmcache4j.bench.pd;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

import lmcache4j.bench.model.ModelSource;
import lmcache4j.engine.json.Json;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.server.pd.PdWorkerServer;

/**
 * A PD deployment on this machine, each part its own JVM: decoders and prefillers
 * ({@link PdRoleMain}), and the proxy ({@link PdProxyMain}) in front of them, sharing a fresh token
 * from a file only its owner reads; optionally a colocated worker beside them (one process doing
 * prefill and decode: what PD is compared with). Processes can be pinned to CPUs with
 * {@code taskset}. {@link #close()} stops them all and says whether each closed cleanly.
 */
public final class PdCluster implements AutoCloseable {
    private static final String HOST = "127.0.0.1";
    private static final Duration START = Duration.ofMinutes(3);

    /**
     * @param model         the model every role loads
     * @param prefillers    prefiller processes
     * @param decoders      decoder processes
     * @param colocated     also start a colocated worker
     * @param bufferBytes   every role's {@code pd_buffer_size}
     * @param timeoutMs     {@code pd_timeout_ms}
     * @param prefillerCpus {@code taskset -c} of the prefillers, if any
     * @param decoderCpus   {@code taskset -c} of the decoders, if any
     * @param colocatedCpus {@code taskset -c} of the colocated worker, if any
     * @param dir           where the token file and the logs go
     */
    public record Options(ModelSource model, int prefillers, int decoders, boolean colocated, long bufferBytes, int timeoutMs,
                          Optional<String> prefillerCpus, Optional<String> decoderCpus, Optional<String> colocatedCpus,
                          Path dir) {
    }

    private final List<PdProcess> processes = new ArrayList<>();
    private final List<String> prefillerUrls = new ArrayList<>();
    private final List<String> decoderUrls = new ArrayList<>();
    private final Map<String, PdProcess> byUrl = new LinkedHashMap<>();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    /** The bearer the PD workers demand (the proxy, and a colocated worker, ignore it). */
    private String workerAuthorization = "";
    private String proxyUrl;
    private String colocatedUrl;
    private int noticePort;

    private PdCluster() {
    }

    /** Starts the deployment: roles first (their models load in parallel), then the proxy. */
    public static PdCluster start(Options o) throws IOException {
        PdCluster c = new PdCluster();
        try {
            c.startAll(o);
            return c;
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    private void startAll(Options o) throws IOException {
        Path tokenFile = o.dir().resolve("pd-token");
        DeploymentSecret.createTokenFile(tokenFile);
        String token = Files.readString(tokenFile).strip();
        workerAuthorization = PdWorkerServer.authorization(token.getBytes(StandardCharsets.UTF_8));
        noticePort = freePort();
        Map<String, Object> extra = Map.of("p2p_token", token, "pd_timeout_ms", (long) o.timeoutMs());
        List<PdProcess> decoders = new ArrayList<>();
        List<PdProcess> prefillers = new ArrayList<>();
        for (int i = 0; i < o.decoders(); i++) {
            Map<String, Object> config = base(o, extra);
            decoders.add(start("decoder-" + i, PdRoleMain.class, PdRoleMain.spec(JlamaPdWorker.Role.DECODER, o.model(), HOST, 0,
                    config), o, o.decoderCpus()));
        }
        for (int i = 0; i < o.prefillers(); i++) {
            Map<String, Object> config = base(o, extra);
            config.put("pd_proxy_host", HOST);
            config.put("pd_proxy_port", (long) noticePort);
            prefillers.add(start("prefiller-" + i, PdRoleMain.class, PdRoleMain.spec(JlamaPdWorker.Role.PREFILLER, o.model(),
                    HOST, 0, config), o, o.prefillerCpus()));
        }
        Optional<PdProcess> colocated = Optional.empty();
        if (o.colocated()) {
            Map<String, Object> config = new LinkedHashMap<>();
            config.put("chunk_size", 256L);
            config.put("max_local_cpu_size", 0.25);
            config.put("local_cpu", false); // no reuse between requests: the same compute as PD's
            config.put("hash_seed", "0");
            colocated = Optional.of(start("colocated", PdRoleMain.class, PdRoleMain.spec(JlamaPdWorker.Role.COLOCATED,
                    o.model(), HOST, 0, config), o, o.colocatedCpus()));
        }
        for (PdProcess p : decoders) {
            decoderUrls.add(ready(p));
        }
        for (PdProcess p : prefillers) {
            prefillerUrls.add(ready(p));
        }
        if (colocated.isPresent()) {
            colocatedUrl = ready(colocated.get());
        }
        PdProcess proxy = start("proxy", PdProxyMain.class, PdProxyMain.spec(HOST, noticePort, prefillerUrls, decoderUrls,
                tokenFile, o.timeoutMs() * 4L), o, Optional.empty());
        proxyUrl = ready(proxy);
    }

    private static Map<String, Object> base(Options o, Map<String, Object> extra) {
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("chunk_size", 256L);
        config.put("max_local_cpu_size", 0.25);
        config.put("hash_seed", "0");
        // As LMCache's example configs: no prefix reuse between requests, so every prompt is computed by its prefiller
        // and its KV reaches the decoder through the PD buffer only (and PD is timed against one process computing all).
        config.put("local_cpu", false);
        config.put("pd_buffer_size", (double) o.bufferBytes());
        config.put("extra_config", extra);
        return config;
    }

    private PdProcess start(String name, Class<?> main, String spec, Options o, Optional<String> cpus) throws IOException {
        PdProcess p = PdProcess.start(name, main, spec, o.dir(), cpus);
        processes.add(p);
        return p;
    }

    private String ready(PdProcess p) {
        Map<String, Object> ready = p.await("ready", START);
        String url = HOST + ":" + ((Number) ready.get("http_port")).intValue();
        byUrl.put(url, p);
        return url;
    }

    /**
     * A free port for the proxy's notice port, which the prefillers must know before the proxy starts.
     * It is taken below the kernel's ephemeral range: the workers started meanwhile bind port 0, and
     * one of them could otherwise be handed the port just let go (it happened once in CI: the proxy
     * then failed to bind). Falls back to an ephemeral one where the range cannot be read.
     */
    private static int freePort() throws IOException {
        InetAddress host = InetAddress.getByName(HOST);
        int low = ephemeralLow();
        SplittableRandom random = new SplittableRandom();
        for (int attempt = 0; low > 10_000 && attempt < 100; attempt++) {
            int port = random.nextInt(10_000, low);
            try (ServerSocket s = new ServerSocket(port, 1, host)) {
                return s.getLocalPort();
            } catch (IOException e) {
                // taken: try another
            }
        }
        try (ServerSocket s = new ServerSocket(0, 1, host)) {
            return s.getLocalPort();
        }
    }

    /** The low end of the kernel's ephemeral port range (Linux), or 0 when it cannot be read. */
    private static int ephemeralLow() {
        try {
            String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).strip();
            return Integer.parseInt(range.split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /** The proxy's HTTP address, {@code host:port}. */
    public String proxyUrl() {
        return proxyUrl;
    }

    /** The colocated worker's HTTP address, if one was started. */
    public Optional<String> colocatedUrl() {
        return Optional.ofNullable(colocatedUrl);
    }

    /** The prefillers' HTTP addresses. */
    public List<String> prefillerUrls() {
        return List.copyOf(prefillerUrls);
    }

    /** The decoders' HTTP addresses. */
    public List<String> decoderUrls() {
        return List.copyOf(decoderUrls);
    }

    /** The process serving {@code url}. */
    public PdProcess process(String url) {
        return byUrl.get(url);
    }

    /** {@code POST url/path} with {@code body}; the answer's JSON object, or an exception naming the status and error. */
    public Map<String, Object> post(String url, String path, Map<String, Object> body) {
        HttpRequest r = HttpRequest.newBuilder(URI.create("http://" + url + path)).timeout(Duration.ofMinutes(10))
                .header("Authorization", workerAuthorization).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Json.write(body))).build();
        return send(r);
    }

    /** {@code GET url/path}. */
    public Map<String, Object> get(String url, String path) {
        return send(HttpRequest.newBuilder(URI.create("http://" + url + path)).timeout(Duration.ofSeconds(30))
                .header("Authorization", workerAuthorization).GET().build());
    }

    /** Sends {@code body} to {@code url/path} without waiting. */
    public CompletableFuture<Map<String, Object>> postAsync(String url, String path, Map<String, Object> body) {
        return CompletableFuture.supplyAsync(() -> post(url, path, body), r -> Thread.ofVirtual().start(r));
    }

    private Map<String, Object> send(HttpRequest r) {
        try {
            HttpResponse<String> response = client.send(r, HttpResponse.BodyHandlers.ofString());
            Map<String, Object> m = Json.parseObject(response.body());
            if (response.statusCode() != 200) {
                throw new IllegalStateException(r.uri() + " answered " + response.statusCode() + ": " + m.get("error"));
            }
            return m;
        } catch (IOException e) {
            throw new UncheckedIOException(r.uri() + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** A {@code /generate} body. */
    public static Map<String, Object> generate(int[] prompt, int maxTokens, boolean logits) {
        Map<String, Object> m = new LinkedHashMap<>();
        List<Object> ids = new ArrayList<>(prompt.length);
        for (int t : prompt) {
            ids.add((long) t);
        }
        m.put("prompt_token_ids", ids);
        m.put("max_tokens", (long) maxTokens);
        m.put("return_logits", logits);
        m.put("req_id", "direct-" + System.nanoTime());
        return m;
    }

    /** Stops every process (end of input, then signals); the names of those that did not close cleanly. */
    public List<String> stop() {
        List<String> unclean = new ArrayList<>();
        for (PdProcess p : processes.reversed()) {
            if (p.isAlive() && !p.stop()) {
                unclean.add(p.name() + " (log ends: " + p.logTail() + ")");
            }
        }
        processes.clear();
        return unclean;
    }

    @Override
    public void close() {
        stop();
    }
}
