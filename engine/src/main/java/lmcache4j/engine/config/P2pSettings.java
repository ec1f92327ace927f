package lmcache4j.engine.config;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Peer-to-peer sharing's settings, typed: {@code enable_p2p}, {@code p2p_host}, {@code p2p_init_ports}
 * (LMCache's names) and the {@code extra_config} keys {@code p2p_timeout_ms}, {@code p2p_token},
 * {@code p2p_connections}. Present only with {@code enable_p2p} ({@link LMCacheEngineConfig#p2p()}).
 *
 * <p>P2P is never unauthenticated: an engine reads KV from a peer only after the peer proved it
 * holds the deployment's P2P token, so {@code enable_p2p} needs {@code p2p_token} or
 * {@code deployment_secret_file} (which derives one). Without a token, whatever process registered
 * with the controller under a peer's name (the controller's {@code --insecure} mode lets any) could
 * serve forged KV that passes every checksum.
 *
 * @param host        {@code p2p_host}: where this engine's transfer server binds and peers connect
 * @param initPorts   {@code p2p_init_ports}: worker {@code i}'s transfer server port is entry {@code i}
 * @param timeout     the deadline of one peer fetch, controller lookup included
 * @param token       the transfer servers' shared secret, or empty when {@code deployment_secret_file} derives it
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

    /** The fewest characters a {@code p2p_token} may have (as many as a deployment secret's bytes). */
    public static final int MIN_TOKEN_CHARS = 16;

    static Optional<P2pSettings> from(LMCacheEngineConfig config) {
        if (!config.enableP2p()) {
            return Optional.empty();
        }
        var extra = config.extraConfig();
        Optional<String> token = ExtraConfigKeys.P2P_TOKEN.valueIn(extra);
        if (token.isEmpty() && config.deploymentSecretFile().isEmpty()) {
            throw new IllegalArgumentException("enable_p2p needs a P2P token, so that a peer proves it belongs to the "
                    + "deployment before this engine reads KV from it: set extra_config.p2p_token to the same secret of "
                    + MIN_TOKEN_CHARS + "+ characters in every instance (make one with: head -c 32 /dev/urandom | base64), "
                    + "or deployment_secret_file. Without one, any process that registers with the controller could serve "
                    + "forged KV");
        }
        if (token.isPresent() && token.get().length() < MIN_TOKEN_CHARS) {
            throw new IllegalArgumentException("extra_config.p2p_token has " + token.get().length() + " characters; use at "
                    + "least " + MIN_TOKEN_CHARS + " (make one with: head -c 32 /dev/urandom | base64)");
        }
        return Optional.of(new P2pSettings(config.p2pHost().orElse(""), config.p2pInitPorts().orElse(List.of()),
                Duration.ofMillis(ExtraConfigKeys.P2P_TIMEOUT_MS.valueOrDefault(extra)), token,
                ExtraConfigKeys.P2P_CONNECTIONS.valueOrDefault(extra)));
    }
}
