package lmcache4j.engine.config;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Disaggregated prefill's settings, typed: LMCache's {@code enable_pd}, {@code pd_role},
 * {@code pd_buffer_size}, {@code pd_buffer_device}, {@code pd_peer_host}, {@code pd_peer_init_port},
 * {@code pd_peer_alloc_port}, {@code pd_proxy_host}, {@code pd_proxy_port} and
 * {@code transfer_channel}, and the {@code extra_config} keys {@code pd_timeout_ms},
 * {@code pd_unclaimed_ttl_ms} and {@code p2p_token}. Present only with {@code enable_pd}
 * ({@link LMCacheEngineConfig#pd()}).
 *
 * <p>The channel is never unauthenticated: a receiver takes chunks only from a sender that proved
 * it holds the deployment's token, and checks a tag on every message, so {@code enable_pd} needs
 * {@code p2p_token} or {@code deployment_secret_file} (which derives one), as {@code enable_p2p} does.
 *
 * @param role           {@code pd_role}
 * @param bufferBytes    {@code pd_buffer_size}: the receiver's room for pushed chunks, the sender's for chunks in flight
 * @param peerHost       the receiver's {@code pd_peer_host}: where its PD ports bind (empty on a sender)
 * @param peerInitPorts  the receiver's {@code pd_peer_init_port}: worker {@code i}'s transfer port is entry {@code i}
 * @param peerAllocPorts the receiver's {@code pd_peer_alloc_port}: worker {@code i}'s allocation port is entry {@code i}
 * @param proxyHost      the sender's {@code pd_proxy_host} (empty: no proxy is told)
 * @param proxyPort      the sender's {@code pd_proxy_port}
 * @param token          {@code p2p_token}, or empty when {@code deployment_secret_file} derives it
 * @param timeout        {@code pd_timeout_ms}: the bound of every PD wait
 * @param unclaimedTtl   {@code pd_unclaimed_ttl_ms}: how long a landed chunk no retrieve read is kept
 */
public record PdSettings(Role role, long bufferBytes, Optional<String> peerHost, List<Integer> peerInitPorts,
                         List<Integer> peerAllocPorts, Optional<String> proxyHost, OptionalInt proxyPort,
                         Optional<String> token, Duration timeout, Duration unclaimedTtl) {
    /** The fewest bytes a PD buffer may have. */
    public static final long MIN_BUFFER_BYTES = 1L << 20;

    /** LMCache's {@code pd_role}. */
    public enum Role {
        /** {@code sender}: the prefiller, which computes a prompt's KV and pushes it. */
        SENDER("sender"),
        /** {@code receiver}: the decoder, which holds pushed KV in its PD buffer until its retrieve reads it. */
        RECEIVER("receiver");

        private final String configName;

        Role(String configName) {
            this.configName = configName;
        }

        /** The {@code pd_role} value. */
        public String configName() {
            return configName;
        }
    }

    public PdSettings {
        Objects.requireNonNull(role, "role");
        peerInitPorts = List.copyOf(peerInitPorts);
        peerAllocPorts = List.copyOf(peerAllocPorts);
        Objects.requireNonNull(peerHost, "peerHost");
        Objects.requireNonNull(proxyHost, "proxyHost");
        Objects.requireNonNull(proxyPort, "proxyPort");
        Objects.requireNonNull(token, "token");
        if (bufferBytes < MIN_BUFFER_BYTES) {
            throw new IllegalArgumentException("pd_buffer_size must be at least " + MIN_BUFFER_BYTES + " bytes (1 MiB), got "
                    + bufferBytes);
        }
        if (role == Role.RECEIVER) {
            if (peerHost.isEmpty() || peerHost.get().isBlank()) {
                throw new IllegalArgumentException("pd_role receiver needs pd_peer_host: the address senders reach this "
                        + "decoder at (its PD ports bind there)");
            }
            if (peerInitPorts.isEmpty() || peerAllocPorts.isEmpty()) {
                throw new IllegalArgumentException("pd_role receiver needs pd_peer_init_port and pd_peer_alloc_port: one "
                        + "transfer port and one allocation port per worker, for example [7300] and [7400]");
            }
            if (peerInitPorts.size() != peerAllocPorts.size()) {
                throw new IllegalArgumentException("pd_peer_init_port " + peerInitPorts + " and pd_peer_alloc_port "
                        + peerAllocPorts + " must have one entry per worker each");
            }
            for (List<Integer> ports : List.of(peerInitPorts, peerAllocPorts)) {
                for (int port : ports) {
                    if (port < 0 || port > 65535) {
                        throw new IllegalArgumentException("pd_peer_init_port and pd_peer_alloc_port entries must be "
                                + "0..65535 (0: any free port), got " + ports);
                    }
                }
            }
        }
        if (proxyHost.isPresent() != proxyPort.isPresent()) {
            throw new IllegalArgumentException("pd_proxy_host and pd_proxy_port go together: the proxy's notice address");
        }
        if (timeout.isNegative() || timeout.isZero() || unclaimedTtl.isNegative() || unclaimedTtl.isZero()) {
            throw new IllegalArgumentException("pd_timeout_ms and pd_unclaimed_ttl_ms must be positive, got " + timeout
                    + " and " + unclaimedTtl);
        }
    }

    /** The receiver's transfer port of worker {@code workerId}. */
    public int initPortOf(int workerId) {
        return portOf(peerInitPorts, "pd_peer_init_port", workerId);
    }

    /** The receiver's allocation port of worker {@code workerId}. */
    public int allocPortOf(int workerId) {
        return portOf(peerAllocPorts, "pd_peer_alloc_port", workerId);
    }

    private static int portOf(List<Integer> ports, String field, int workerId) {
        if (workerId < 0 || workerId >= ports.size()) {
            throw new IllegalArgumentException(field + " " + ports + " has no port for worker " + workerId
                    + ": give one per worker");
        }
        return ports.get(workerId);
    }

    static Optional<PdSettings> from(LMCacheEngineConfig config) {
        if (!config.enablePd()) {
            return Optional.empty();
        }
        String role = config.pdRole().orElseThrow(() -> new IllegalArgumentException(
                "enable_pd needs pd_role: sender (the prefiller, which pushes KV) or receiver (the decoder, which holds it)"));
        long buffer = config.pdBufferSize().orElseThrow(() -> new IllegalArgumentException(
                "enable_pd needs pd_buffer_size: the PD buffer's bytes (for example 1073741824 for 1 GiB)"));
        if (config.pdBufferDevice().isEmpty()) {
            throw new IllegalArgumentException("enable_pd needs pd_buffer_device: cpu (lmcache4j's PD buffer is host memory)");
        }
        var extra = config.extraConfig();
        Optional<String> token = ExtraConfigKeys.P2P_TOKEN.valueIn(extra);
        if (token.isEmpty() && config.deploymentSecretFile().isEmpty()) {
            throw new IllegalArgumentException("enable_pd needs a token, so that a decoder takes KV only from its deployment's "
                    + "prefillers and a proxy takes only their notices: set extra_config.p2p_token to the same secret of "
                    + P2pSettings.MIN_TOKEN_CHARS + "+ characters in every PD process and the proxy (make one with: head -c 32 "
                    + "/dev/urandom | base64), or deployment_secret_file");
        }
        if (token.isPresent() && token.get().length() < P2pSettings.MIN_TOKEN_CHARS) {
            throw new IllegalArgumentException("extra_config.p2p_token has " + token.get().length() + " characters; use at "
                    + "least " + P2pSettings.MIN_TOKEN_CHARS + " (make one with: head -c 32 /dev/urandom | base64)");
        }
        Role r = role.equals("sender") ? Role.SENDER : Role.RECEIVER;
        OptionalInt proxyPort = config.pdProxyPort().map(OptionalInt::of).orElse(OptionalInt.empty());
        // A sender without a proxy is an embedder's, who learns a push is done from PdTransfer.finish(); the
        // pd-worker process, which a proxy drives, demands one (LMCache's sender always has one).
        return Optional.of(new PdSettings(r, buffer, r == Role.RECEIVER ? config.pdPeerHost() : Optional.empty(),
                r == Role.RECEIVER ? config.pdPeerInitPort().orElse(List.of()) : List.of(),
                r == Role.RECEIVER ? config.pdPeerAllocPort().orElse(List.of()) : List.of(),
                config.pdProxyHost(), proxyPort, token,
                Duration.ofMillis(ExtraConfigKeys.PD_TIMEOUT_MS.valueOrDefault(extra)),
                Duration.ofMillis(ExtraConfigKeys.PD_UNCLAIMED_TTL_MS.valueOrDefault(extra))));
    }
}
