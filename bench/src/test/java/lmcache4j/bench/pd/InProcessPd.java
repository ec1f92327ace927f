package lmcache4j.bench.pd;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.server.pd.PdProxy;
import lmcache4j.server.pd.PdWorkerServer;

/**
 * A PD deployment in this JVM for tests: real roles over the tiny Jlama model, each with its own
 * engine and HTTP API, real PD ports and a real proxy, on loopback. Each role can be closed on its
 * own (a decoder that goes away).
 */
final class InProcessPd implements AutoCloseable {
    static final String TOKEN = "in-process-pd-token-0123456789";
    static final String MODEL = "synthetic/tiny";

    /** One role and its HTTP API. */
    record Role(JlamaPdWorker worker, PdWorkerServer http) implements AutoCloseable {
        String url() {
            return "127.0.0.1:" + http.address().getPort();
        }

        @Override
        public void close() {
            http.close();
            worker.close();
        }
    }

    final List<Role> prefillers = new ArrayList<>();
    final List<Role> decoders = new ArrayList<>();
    final PdProxy proxy;

    /**
     * @param bufferBytes each decoder's {@code pd_buffer_size}
     * @param timeoutMs   {@code pd_timeout_ms}
     * @param unreachable decoder addresses the proxy is told of that nobody serves (a decoder that died)
     */
    InProcessPd(AbstractModel model, int prefillerCount, int decoderCount, long bufferBytes, int timeoutMs,
                List<String> unreachable) throws IOException {
        int noticePort = freePort();
        try {
            for (int i = 0; i < decoderCount; i++) {
                decoders.add(role(model, JlamaPdWorker.Role.DECODER, config(bufferBytes, timeoutMs)));
            }
            for (int i = 0; i < prefillerCount; i++) {
                Map<String, Object> c = config(16L << 20, timeoutMs);
                c.put("pd_proxy_host", "127.0.0.1");
                c.put("pd_proxy_port", noticePort);
                prefillers.add(role(model, JlamaPdWorker.Role.PREFILLER, c));
            }
            List<String> decoderUrls = new ArrayList<>(unreachable);
            decoders.forEach(d -> decoderUrls.add(d.url()));
            proxy = PdProxy.start(new PdProxy.Settings("127.0.0.1", 0, noticePort, prefillers.stream().map(Role::url).toList(),
                    decoderUrls, TOKEN.getBytes(StandardCharsets.UTF_8), Duration.ofMillis(4L * timeoutMs),
                    Duration.ofSeconds(60), 8, 512));
        } catch (IOException | RuntimeException e) {
            closeRoles();
            throw e;
        }
    }

    static Map<String, Object> config(long bufferBytes, int timeoutMs) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("chunk_size", 256);
        c.put("max_local_cpu_size", 0.05);
        c.put("local_cpu", false);
        c.put("pd_buffer_size", (double) bufferBytes);
        c.put("extra_config", Map.of("p2p_token", TOKEN, "pd_timeout_ms", timeoutMs));
        return c;
    }

    static Role role(AbstractModel model, JlamaPdWorker.Role role, Map<String, Object> config) throws IOException {
        ConfigLoader.Builder b = ConfigLoader.builder().environment(Map.of());
        config.forEach(b::set);
        JlamaPdWorker w = JlamaPdWorker.start(role, model, MODEL, PdRoleConfig.build(role, b, "127.0.0.1", note -> { }));
        try {
            return new Role(w, PdWorkerServer.start(new InetSocketAddress("127.0.0.1", 0), 8, w, w.pdToken()));
        } catch (IOException | RuntimeException e) {
            w.close();
            throw e;
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    String proxyUrl() {
        return "127.0.0.1:" + proxy.httpAddress().getPort();
    }

    private void closeRoles() {
        prefillers.forEach(Role::close);
        decoders.forEach(Role::close);
    }

    @Override
    public void close() {
        proxy.close();
        closeRoles();
    }
}
