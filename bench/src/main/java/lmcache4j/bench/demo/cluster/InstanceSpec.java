package lmcache4j.bench.demo.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import lmcache4j.bench.demo.ServingSimulator.Settings;
import lmcache4j.bench.demo.Workload;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.json.Json;

/**
 * One serving instance of the multi-instance demo: its engine's tiers, where it reports to the
 * controller, where its lookup server and (with P2P) its transfer server listen. Travels to the
 * instance's process as one JSON argument.
 *
 * @param instanceId      {@code lmcache_instance_id}
 * @param cpuGb           its CPU tier
 * @param diskDir         its disk tier's directory
 * @param diskGb          its disk tier
 * @param layers          the model's layers
 * @param seed            the workload's seed (the paged cache is sized for the workload's longest request)
 * @param controllerPull  the controller's PULL address, HOST:PORT
 * @param controllerReply the controller's reply address, HOST:PORT
 * @param p2pPort         its transfer server's port, or 0 without P2P
 * @param schedulerUrl    the scheduler's lookup answer socket ({@code lookup_scheduler_url})
 * @param workerUrl       its lookup server's socket ({@code lookup_worker_urls})
 * @param secretFile      the deployment secret's file ({@code deployment_secret_file}), or empty for none
 * @param p2pTokenFile    a file holding the P2P token ({@code p2p_token}) when no secret derives one, or empty; a
 *                        file, not the token itself: this spec travels on the instance's command line
 */
public record InstanceSpec(String instanceId, double cpuGb, Path diskDir, double diskGb, int layers, long seed,
                           String controllerPull, String controllerReply, int p2pPort, String schedulerUrl,
                           String workerUrl, String secretFile, String p2pTokenFile) {
    /** How long the scheduler waits for a lookup's answer before it counts as 0 tokens. */
    static final int LOOKUP_TIMEOUT_MS = 20_000;
    /** How long a prefetch no retrieve consumes stays held. */
    static final int PIN_TIMEOUT_SEC = 60;
    /** How long a peer fetch may take before it is a miss. */
    static final int P2P_TIMEOUT_MS = 5_000;

    public boolean p2p() {
        return p2pPort != 0;
    }

    /** The simulator's settings: the demo's model, one request at a time, this instance's tiers. */
    Settings settings() {
        return new Settings(1, cpuGb, layers, Settings.DEFAULT_KV_HEADS, Settings.DEFAULT_HEAD_SIZE,
                Settings.DEFAULT_BLOCK_SIZE, Settings.DEFAULT_CHUNK_SIZE, seed, Workload.Shape.defaults(seed), diskDir, diskGb,
                null, null);
    }

    /** The engine config entries beyond the simulator's own: controller, lookup service, P2P. */
    void configure(ConfigLoader.Builder b) {
        b.set("enable_controller", true).set("lmcache_instance_id", instanceId)
                .set("controller_pull_url", controllerPull).set("controller_reply_url", controllerReply)
                .set("enable_async_loading", true).set("lookup_scheduler_url", schedulerUrl)
                .set("lookup_worker_urls", List.of(workerUrl)).set("lookup_timeout_ms", LOOKUP_TIMEOUT_MS)
                .set("pin_timeout_sec", PIN_TIMEOUT_SEC);
        if (!secretFile.isEmpty()) {
            b.set("deployment_secret_file", secretFile);
        }
        if (p2p()) {
            Map<String, Object> extra = new LinkedHashMap<>(Map.of("use_odirect", true, "p2p_timeout_ms", P2P_TIMEOUT_MS));
            if (!p2pTokenFile.isEmpty()) {
                extra.put("p2p_token", readToken(Path.of(p2pTokenFile)));
            }
            b.set("enable_p2p", true).set("p2p_host", "127.0.0.1").set("p2p_init_ports", List.of(p2pPort))
                    .set("extra_config", extra);
        }
    }

    private static String readToken(Path file) {
        try {
            return Files.readString(file).strip();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the P2P token file " + file, e);
        }
    }

    String toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("instance_id", instanceId);
        m.put("cpu_gb", cpuGb);
        m.put("disk_dir", diskDir.toString());
        m.put("disk_gb", diskGb);
        m.put("layers", (long) layers);
        m.put("seed", seed);
        m.put("controller_pull", controllerPull);
        m.put("controller_reply", controllerReply);
        m.put("p2p_port", (long) p2pPort);
        m.put("scheduler_url", schedulerUrl);
        m.put("worker_url", workerUrl);
        m.put("secret_file", secretFile);
        m.put("p2p_token_file", p2pTokenFile);
        return Json.write(m);
    }

    static InstanceSpec fromJson(String json) {
        Map<String, Object> m = Json.parseObject(json);
        return new InstanceSpec((String) m.get("instance_id"), ((Number) m.get("cpu_gb")).doubleValue(),
                Path.of((String) m.get("disk_dir")), ((Number) m.get("disk_gb")).doubleValue(),
                ((Number) m.get("layers")).intValue(), ((Number) m.get("seed")).longValue(),
                (String) m.get("controller_pull"), (String) m.get("controller_reply"), ((Number) m.get("p2p_port")).intValue(),
                (String) m.get("scheduler_url"), (String) m.get("worker_url"), (String) m.get("secret_file"),
                (String) m.get("p2p_token_file"));
    }
}
