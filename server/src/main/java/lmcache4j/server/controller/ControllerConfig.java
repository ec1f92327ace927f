package lmcache4j.server.controller;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.zmq.ConnectionLimits;

/**
 * How a controller runs: where it listens, how it hashes prompts (which must match the engines:
 * LMCache's RegisterMsg carries none of it), and its limits.
 *
 * @param pull            PULL socket: workers' pushed admits, evicts, full-sync batches, deregistrations,
 *                        and orchestrators' fire-and-forget messages ({@code controller_pull_url})
 * @param reply           ROUTER socket: RegisterMsg, FullSyncStart/Status, P2P lookups ({@code controller_reply_url})
 * @param heartbeat       ROUTER socket for heartbeats (told to workers in RegisterRetMsg)
 * @param http            the HTTP JSON API
 * @param chunkSize       tokens per chunk, as the engines' {@code chunk_size}
 * @param saveUnfullChunk whether a final shorter chunk is keyed, as the engines' {@code save_unfull_chunk}
 * @param hashSeed        the engines' {@code hash_seed} / {@code PYTHONHASHSEED}; empty: none (lookups match nothing)
 * @param chunkKeys       how a chunk becomes a key, as the engines' {@code controller_chunk_keys} (LMCache's by default)
 * @param model           the served model's name (reported; the chunk hash itself does not include it)
 * @param workerTimeout   a worker silent this long is dropped with its entries ({@code lmcache_worker_timeout})
 * @param requestTimeout  how long a control message to a worker may take before it counts as failed
 * @param maxBodyBytes    largest HTTP request body
 * @param httpThreads     HTTP requests handled at once (requests still arriving, on virtual threads, do not count)
 * @param maxFrameBytes   largest ZeroMQ message accepted on any socket (larger: the peer is disconnected)
 * @param expectedEntries index entries to size the table for at start
 * @param caps            what outsiders can make the controller hold
 * @param secretFile      the file holding the deployment secret (the engines' {@code deployment_secret_file}),
 *                        read when the controller starts: CURVE on every ZeroMQ socket and a bearer token on
 *                        the HTTP API; empty: none (LMCache's Python workers cannot authenticate), which the
 *                        command line only accepts with {@code --insecure}
 */
public record ControllerConfig(Endpoint pull, Endpoint reply, Endpoint heartbeat, Endpoint http, int chunkSize,
                               boolean saveUnfullChunk, HashAlgorithm hashAlgorithm, Optional<String> hashSeed,
                               ControllerKeys.Scheme chunkKeys, String model, Duration workerTimeout, Duration requestTimeout, int maxBodyBytes,
                               int httpThreads, long maxFrameBytes, int expectedEntries, Caps caps,
                               Optional<Path> secretFile) {
    /** LMCache's default ports: 8300 pull, 8400 reply (lmcache_worker ports start at 8500); heartbeat beside them. */
    public static ControllerConfig defaults() {
        return new ControllerConfig(new Endpoint("127.0.0.1", 8300), new Endpoint("127.0.0.1", 8400),
                new Endpoint("127.0.0.1", 8301), new Endpoint("127.0.0.1", 9000), 256, false,
                HashAlgorithm.defaultAlgorithm(), Optional.ofNullable(System.getenv("PYTHONHASHSEED")),
                ControllerKeys.Scheme.LMCACHE, "",
                Duration.ofSeconds(30), Duration.ofSeconds(5), 8 << 20, 4, 64L << 20, 1 << 20, Caps.defaults(), Optional.empty());
    }

    /** Every address on loopback, port 0 (any free port): for tests and benchmarks. */
    public static ControllerConfig loopbackAnyPorts() {
        Endpoint any = new Endpoint("127.0.0.1", 0);
        return defaults().withEndpoints(any, any, any, any).withHashSeed(Optional.of("0"));
    }

    public ControllerConfig {
        Objects.requireNonNull(pull, "pull");
        Objects.requireNonNull(reply, "reply");
        Objects.requireNonNull(heartbeat, "heartbeat");
        Objects.requireNonNull(http, "http");
        Objects.requireNonNull(hashAlgorithm, "hashAlgorithm");
        Objects.requireNonNull(hashSeed, "hashSeed");
        Objects.requireNonNull(chunkKeys, "chunkKeys");
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(caps, "caps");
        Objects.requireNonNull(secretFile, "secretFile");
        if (chunkSize < 1) {
            throw new IllegalArgumentException("chunk size must be at least 1 token, was " + chunkSize);
        }
        if (workerTimeout.isNegative() || workerTimeout.isZero() || requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException("timeouts must be positive: worker " + workerTimeout + ", request " + requestTimeout);
        }
        if (maxBodyBytes < 1024 || httpThreads < 1 || maxFrameBytes < 1024 || expectedEntries < 0) {
            throw new IllegalArgumentException("max body >= 1024 bytes, HTTP threads >= 1, max frame >= 1024 bytes, "
                    + "expected entries >= 0; got " + maxBodyBytes + ", " + httpThreads + ", " + maxFrameBytes + ", " + expectedEntries);
        }
    }

    public ControllerConfig withEndpoints(Endpoint pull, Endpoint reply, Endpoint heartbeat, Endpoint http) {
        return new ControllerConfig(pull, reply, heartbeat, http, chunkSize, saveUnfullChunk, hashAlgorithm, hashSeed, chunkKeys, model,
                workerTimeout, requestTimeout, maxBodyBytes, httpThreads, maxFrameBytes, expectedEntries, caps, secretFile);
    }

    public ControllerConfig withHashing(int chunkSize, boolean saveUnfullChunk, HashAlgorithm algorithm, Optional<String> seed) {
        return new ControllerConfig(pull, reply, heartbeat, http, chunkSize, saveUnfullChunk, algorithm, seed, chunkKeys, model,
                workerTimeout, requestTimeout, maxBodyBytes, httpThreads, maxFrameBytes, expectedEntries, caps, secretFile);
    }

    public ControllerConfig withHashSeed(Optional<String> seed) {
        return withHashing(chunkSize, saveUnfullChunk, hashAlgorithm, seed);
    }

    public ControllerConfig withChunkKeys(ControllerKeys.Scheme chunkKeys) {
        return new ControllerConfig(pull, reply, heartbeat, http, chunkSize, saveUnfullChunk, hashAlgorithm, hashSeed, chunkKeys,
                model, workerTimeout, requestTimeout, maxBodyBytes, httpThreads, maxFrameBytes, expectedEntries, caps, secretFile);
    }

    public ControllerConfig withModel(String model) {
        return new ControllerConfig(pull, reply, heartbeat, http, chunkSize, saveUnfullChunk, hashAlgorithm, hashSeed, chunkKeys, model,
                workerTimeout, requestTimeout, maxBodyBytes, httpThreads, maxFrameBytes, expectedEntries, caps, secretFile);
    }

    public ControllerConfig withTimeouts(Duration workerTimeout, Duration requestTimeout) {
        return new ControllerConfig(pull, reply, heartbeat, http, chunkSize, saveUnfullChunk, hashAlgorithm, hashSeed, chunkKeys, model,
                workerTimeout, requestTimeout, maxBodyBytes, httpThreads, maxFrameBytes, expectedEntries, caps, secretFile);
    }

    public ControllerConfig withLimits(int maxBodyBytes, int httpThreads, long maxFrameBytes, int expectedEntries) {
        return new ControllerConfig(pull, reply, heartbeat, http, chunkSize, saveUnfullChunk, hashAlgorithm, hashSeed, chunkKeys, model,
                workerTimeout, requestTimeout, maxBodyBytes, httpThreads, maxFrameBytes, expectedEntries, caps, secretFile);
    }

    /**
     * With the deployment secret in {@code secretFile} (readable by its owner only, 16 to 4,096 bytes;
     * make one with {@code (umask 077; head -c 32 /dev/urandom | base64 > FILE)}), or none. The file is
     * read by {@link ControllerServer#start}, which refuses a missing, unreadable or open file.
     */
    public ControllerConfig withSecretFile(Optional<Path> secretFile) {
        return new ControllerConfig(pull, reply, heartbeat, http, chunkSize, saveUnfullChunk, hashAlgorithm, hashSeed, chunkKeys, model,
                workerTimeout, requestTimeout, maxBodyBytes, httpThreads, maxFrameBytes, expectedEntries, caps, secretFile);
    }

    public ControllerConfig withCaps(Caps caps) {
        return new ControllerConfig(pull, reply, heartbeat, http, chunkSize, saveUnfullChunk, hashAlgorithm, hashSeed, chunkKeys, model,
                workerTimeout, requestTimeout, maxBodyBytes, httpThreads, maxFrameBytes, expectedEntries, caps, secretFile);
    }

    /**
     * What a client of the controller's sockets can make it hold, each refused beyond its cap and
     * counted in {@code lmcache4j_controller_refused_total{what=...}} (connections in
     * {@code lmcache4j_controller_connections_refused_total{limit=...}}).
     *
     * @param maxEntries              (chunk, holder) index entries, about 40 bytes of heap each
     *                                ({@code ./lmcache4j bench controller}); admits beyond it are dropped
     * @param maxWorkers              registered workers; registrations and heartbeats of new ones beyond it are refused
     * @param maxQueuedOrchestrations fire-and-forget orchestration messages waiting for the orchestration
     *                                thread or being carried out by it, each up to {@code maxFrameBytes}
     * @param maxConnections          connections open at once on the three ZeroMQ sockets together; more are closed
     *                                as they arrive
     * @param maxConnectionsPerHost   of those, from one address
     * @param maxHandshaking          of those, not yet proven: in their CURVE handshake (with a secret, where a
     *                                stranger never completes it), or before their first message (without)
     * @param handshakeTimeout        a connection not proven by then is closed, greeted or not
     */
    public record Caps(long maxEntries, int maxWorkers, int maxQueuedOrchestrations, int maxConnections,
                       int maxConnectionsPerHost, int maxHandshaking, Duration handshakeTimeout) {
        /**
         * 2^24 entries (about 650 MiB of heap), 4,096 workers, 4 orchestration messages in hand, and the
         * connections of {@link #Caps(long, int, int)}.
         */
        public static Caps defaults() {
            return new Caps(1L << 24, 4096, 4);
        }

        /**
         * These caps, with connection limits for {@code maxWorkers} workers (three connections each, their
         * pull, reply and heartbeat sockets): {@code 3 × maxWorkers + 256} in all, 1,024 from one address,
         * 256 not yet proven, each proven within 30 s.
         */
        public Caps(long maxEntries, int maxWorkers, int maxQueuedOrchestrations) {
            this(maxEntries, maxWorkers, maxQueuedOrchestrations, ConnectionLimits.forExpected(3 * Math.max(1, maxWorkers)));
        }

        private Caps(long maxEntries, int maxWorkers, int maxQueuedOrchestrations, ConnectionLimits connections) {
            this(maxEntries, maxWorkers, maxQueuedOrchestrations, connections.maxConnections(),
                    connections.maxConnectionsPerHost(), connections.maxHandshaking(), connections.handshakeTimeout());
        }

        public Caps {
            if (maxEntries < 1 || maxWorkers < 1 || maxQueuedOrchestrations < 1) {
                throw new IllegalArgumentException("every cap must be at least 1; got max entries " + maxEntries
                        + ", max workers " + maxWorkers + ", max queued orchestrations " + maxQueuedOrchestrations);
            }
            Objects.requireNonNull(handshakeTimeout, "handshakeTimeout");
            new ConnectionLimits(maxConnections, maxConnectionsPerHost, maxHandshaking, handshakeTimeout); // checks them
        }

        /** These caps with other connection limits. */
        public Caps withConnections(int maxConnections, int maxConnectionsPerHost, int maxHandshaking,
                Duration handshakeTimeout) {
            return new Caps(maxEntries, maxWorkers, maxQueuedOrchestrations, maxConnections, maxConnectionsPerHost,
                    maxHandshaking, handshakeTimeout);
        }

        /** The connection limits of the controller's sockets. */
        ConnectionLimits connections() {
            return new ConnectionLimits(maxConnections, maxConnectionsPerHost, maxHandshaking, handshakeTimeout);
        }
    }

    /** The hashing settings, as {@code GET /instances} reports them. */
    public Map<String, Object> hashingSettings() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("chunk_size", (long) chunkSize);
        m.put("save_unfull_chunk", saveUnfullChunk);
        m.put("pre_caching_hash_algorithm", hashAlgorithm.lmcacheName());
        m.put("hash_seed_set", hashSeed.isPresent());
        m.put("model", model);
        m.put("controller_chunk_keys", chunkKeys.configName());
        return m;
    }
}
