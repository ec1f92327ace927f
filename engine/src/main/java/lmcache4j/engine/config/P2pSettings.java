package lmcache4j.engine.config;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Peer-to-peer sharing's settings, typed: {@code enable_p2p}, {@code p2p_host}, {@code p2p_init_ports}
 * (LMCache's names) and the {@code extra_config} keys {@code p2p_timeout_ms}, {@code p2p_token},
 * {@code p2p_connections}. Present only with {@code enable_p2p} ({@link LMCacheEngineConfig#p2p()}).
 *
 * @param host        {@code p2p_host}: where this engine's transfer server binds and peers connect
 * @param initPorts   {@code p2p_init_ports}: worker {@code i}'s transfer server port is entry {@code i}
 * @param timeout     the deadline of one peer fetch, controller lookup included
 * @param token       the transfer servers' shared secret, or empty
 * @param connections connections per peer
 */
public record P2pSettings(String host, List<Integer> initPorts, Duration timeout, Optional<String> token, int connections) {
    public P2pSettings {
        initPorts = List.copyOf(initPorts);
        if (host.isBlank()) {
            throw new IllegalArgumentException("enable_p2p needs p2p_host: the address peers reach this engine at");
        }
        if (initPorts.isEmpty()) {
            throw new IllegalArgumentException("enable_p2p needs p2p_init_ports: one transfer port per worker");
        }
        for (int port : initPorts) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("p2p_init_ports entries must be 0..65535 (0: any free port), got " + initPorts);
            }
        }
        if (timeout.isNegative() || timeout.isZero() || connections < 1) {
            throw new IllegalArgumentException("the P2P timeout and connections must be positive, got " + timeout
                    + " and " + connections);
        }
    }

    /** The transfer server port of worker {@code workerId}. */
    public int portOf(int workerId) {
        if (workerId < 0 || workerId >= initPorts.size()) {
            throw new IllegalArgumentException("p2p_init_ports " + initPorts + " has no port for worker " + workerId
                    + ": give one per worker");
        }
        return initPorts.get(workerId);
    }

    static Optional<P2pSettings> from(LMCacheEngineConfig config) {
        if (!config.enableP2p()) {
            return Optional.empty();
        }
        var extra = config.extraConfig();
        return Optional.of(new P2pSettings(config.p2pHost().orElse(""), config.p2pInitPorts().orElse(List.of()),
                Duration.ofMillis(ExtraConfigKeys.P2P_TIMEOUT_MS.valueOrDefault(extra)),
                ExtraConfigKeys.P2P_TOKEN.valueIn(extra), ExtraConfigKeys.P2P_CONNECTIONS.valueOrDefault(extra)));
    }
}
