package lmcache4j.engine.controller;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.zmq.ConnectionLimits;
import lmcache4j.engine.zmq.ZmqAddress;

/**
 * What one engine worker needs to talk to the cache controller, read from LMCache's config names
 * (package-private: it holds the deployment secret and connection limits, which only lmcache4j's
 * own modules see; {@link ControllerWorker#start} reads it from the engine's config).
 *
 * @param instanceId          {@code lmcache_instance_id}
 * @param workerId            this worker's id (tensor-parallel rank)
 * @param pullAddress         {@code controller_pull_url} as a ZeroMQ address ({@code tcp://host:port})
 * @param replyAddress        {@code controller_reply_url} as a ZeroMQ address
 * @param controlPort         this worker's REP port from {@code lmcache_worker_ports}; empty = ephemeral
 * @param heartbeatDelayNanos {@code lmcache_worker_heartbeat_delay_time}
 * @param heartbeatNanos      {@code lmcache_worker_heartbeat_time}; 0 = no heartbeats
 * @param queueCapacity       {@code controller_report_queue_size}
 * @param peerInitUrl         this worker's P2P transfer server, {@code p2p_host:p2p_init_ports[worker]} with
 *                            {@code enable_p2p} (LMCache's {@code peer_init_url}); empty without P2P
 * @param secret              the deployment secret ({@code deployment_secret_file}): CURVE on every socket; empty: plain
 * @param controlConnections  what connections to the control socket may hold ({@code extra_config}'s {@code zmq.*})
 */
record ControllerWorkerSettings(String instanceId, int workerId, String pullAddress, String replyAddress,
                                       Optional<Integer> controlPort, long heartbeatDelayNanos, long heartbeatNanos,
                                       int queueCapacity, Optional<String> peerInitUrl, Optional<DeploymentSecret> secret,
                                       ConnectionLimits controlConnections) {
    ControllerWorkerSettings {
        Objects.requireNonNull(secret, "secret");
        Objects.requireNonNull(controlConnections, "controlConnections");
        Objects.requireNonNull(peerInitUrl, "peerInitUrl");
        Objects.requireNonNull(instanceId, "instanceId");
        Objects.requireNonNull(pullAddress, "pullAddress");
        Objects.requireNonNull(replyAddress, "replyAddress");
        Objects.requireNonNull(controlPort, "controlPort");
        if (queueCapacity <= 0 || heartbeatNanos < 0 || heartbeatDelayNanos < 0) {
            throw new IllegalArgumentException("queue capacity must be positive, heartbeat interval and delay not negative");
        }
    }

    /**
     * The settings of worker {@code workerId} from an engine config with {@code enable_controller}.
     *
     * @throws IllegalArgumentException naming the missing or bad setting
     */
    static ControllerWorkerSettings from(LMCacheEngineConfig config, int workerId) {
        String pull = config.controllerPullUrl().orElseThrow(() -> new IllegalArgumentException(
                "enable_controller needs controller_pull_url (or its alias controller_url): the controller's PULL "
                        + "address, host:port"));
        String reply = config.controllerReplyUrl().orElseThrow(() -> new IllegalArgumentException(
                "enable_controller needs controller_reply_url: the controller's ROUTER address, host:port"));
        Optional<Integer> port = Optional.empty();
        Optional<List<Integer>> ports = config.lmcacheWorkerPorts();
        if (ports.isPresent()) {
            if (workerId >= ports.get().size()) {
                throw new IllegalArgumentException("lmcache_worker_ports " + ports.get() + " has no port for worker "
                        + workerId + " (one port per worker id, in order)");
            }
            port = Optional.of(ports.get().get(workerId));
        }
        return new ControllerWorkerSettings(config.lmcacheInstanceId(), workerId, ZmqAddress.of(pull, "controller_pull_url"),
                ZmqAddress.of(reply, "controller_reply_url"), port,
                (long) (config.lmcacheWorkerHeartbeatDelayTime() * 1e9),
                (long) (config.lmcacheWorkerHeartbeatTime() * 1e9), config.controllerReportQueueSize(),
                config.p2p().map(p2p -> p2pUrl(p2p, workerId)), DeploymentSecret.fromConfig(config), ConnectionLimits.of(config));
    }

    /** {@code p2p_host:port}: what peers are told; the port must be fixed (0 cannot be advertised before binding). */
    private static String p2pUrl(lmcache4j.engine.config.P2pSettings p2p, int workerId) {
        int port = p2p.portOf(workerId);
        if (port == 0) {
            throw new IllegalArgumentException("enable_p2p with enable_controller needs a fixed p2p_init_ports entry for "
                    + "worker " + workerId + " (0 = any free port cannot be told to the controller before binding)");
        }
        String host = p2p.host().contains(":") ? "[" + p2p.host() + "]" : p2p.host();
        return host + ":" + port;
    }
}
