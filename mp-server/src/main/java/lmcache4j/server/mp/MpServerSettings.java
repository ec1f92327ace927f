package lmcache4j.server.mp;

import java.time.Duration;
import java.util.Objects;

import lmcache4j.engine.zmq.ConnectionLimits;

/**
 * How {@code ./lmcache4j mp-server} runs: where it listens, the shared-memory pool that is its CPU
 * tier, the chunk size it hashes with, and the bounds on what clients can make it hold.
 *
 * @param host            the ROUTER socket's address (LMCache clients connect a DEALER to it)
 * @param port            its port, 0 for any free one
 * @param httpHost        the HTTP port's address (loopback by default)
 * @param httpPort        its port, 0 for any free one, -1 for none
 * @param chunkSize       tokens per chunk (LMCache's default 256)
 * @param poolBytes       the shared-memory pool's size: every chunk the server holds lives in it
 * @param shmName         the pool's name under {@code /dev/shm} (what workers open)
 * @param sessionTtl      how long an unused session and its prefetch job live (LMCache: 600 s)
 * @param lockTtl         how long a lookup's read locks and a prepared store's slots live without
 *                        their commit (a client that dies cannot pin memory for ever)
 * @param reapTimeout     an instance silent this long is unregistered; zero: never
 * @param maxSessions     sessions at once (the least recently used make room)
 * @param maxInstances    registered instances at once
 * @param maxTokens       tokens one key may carry
 * @param maxMessageBytes the largest request frame; a larger one disconnects its sender
 * @param l2              the lower tiers behind the pool ({@link MpL2Settings#NONE}: none)
 * @param connections     what connections to the ROUTER may hold: in all, per address, before their first message,
 *                        and how soon a connection must send one ({@link #DEFAULT_CONNECTIONS})
 */
public record MpServerSettings(String host, int port, String httpHost, int httpPort, int chunkSize, long poolBytes,
                               String shmName, Duration sessionTtl, Duration lockTtl, Duration reapTimeout, int maxSessions,
                               int maxInstances, int maxTokens, int maxMessageBytes, MpL2Settings l2,
                               ConnectionLimits connections) {
    /** LMCache's chunk size. */
    public static final int DEFAULT_CHUNK_SIZE = 256;
    /** The ROUTER port vLLM's LMCache MP connector is configured with in LMCache's examples. */
    public static final int DEFAULT_PORT = 5555;
    public static final int DEFAULT_HTTP_PORT = 8080;
    /**
     * 1,024 connections (each vLLM worker process opens one), all of them from one address if need be
     * (vLLM runs beside the server), 256 at once before their first message, which must come within
     * 30 s (LMCache's client registers as it connects).
     */
    public static final ConnectionLimits DEFAULT_CONNECTIONS = new ConnectionLimits(1_024, 1_024, 256,
            ConnectionLimits.DEFAULT_HANDSHAKE_TIMEOUT);
    public static final int DEFAULT_MAX_CONNECTIONS = DEFAULT_CONNECTIONS.maxConnections();
    public static final int DEFAULT_MAX_HANDSHAKING = DEFAULT_CONNECTIONS.maxHandshaking();
    public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = DEFAULT_CONNECTIONS.handshakeTimeout();

    public MpServerSettings {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(httpHost, "httpHost");
        Objects.requireNonNull(shmName, "shmName");
        Objects.requireNonNull(sessionTtl, "sessionTtl");
        Objects.requireNonNull(lockTtl, "lockTtl");
        Objects.requireNonNull(reapTimeout, "reapTimeout");
        Objects.requireNonNull(l2, "l2");
        Objects.requireNonNull(connections, "connections");
        if (port < 0 || port > 65535 || httpPort < -1 || httpPort > 65535) {
            throw new IllegalArgumentException("ports must be 0..65535 (HTTP: -1 for none), got " + port + ", " + httpPort);
        }
        if (chunkSize < 1 || poolBytes < 1 || maxSessions < 1 || maxInstances < 1 || maxTokens < chunkSize
                || maxMessageBytes < 1024) {
            throw new IllegalArgumentException("chunk size, pool, sessions, instances must be positive, max tokens at least"
                    + " a chunk and max message at least 1 KiB; got " + chunkSize + ", " + poolBytes + ", " + maxSessions
                    + ", " + maxInstances + ", " + maxTokens + ", " + maxMessageBytes);
        }
        if (sessionTtl.isNegative() || sessionTtl.isZero() || lockTtl.isNegative() || lockTtl.isZero()
                || reapTimeout.isNegative()) {
            throw new IllegalArgumentException("session and lock lifetimes must be positive, the reap timeout >= 0");
        }
        if (l2.enabled() && l2.prefetchTimeout().multipliedBy(2).compareTo(lockTtl) > 0) {
            // A load copies into slots it reserved; they must stay its own for the whole load.
            throw new IllegalArgumentException("the L2 load timeout (--l2-timeout " + l2.prefetchTimeout().toSeconds()
                    + " s) must be at most half the lock lifetime (--lock-ttl " + lockTtl.toSeconds() + " s)");
        }
    }

    /** Loopback, any free ports, a pool of {@code poolBytes} named after this process (tests). */
    public static MpServerSettings loopback(long poolBytes) {
        return defaults(poolBytes).withPorts(0, 0);
    }

    /** The defaults: loopback, LMCache's ports and chunk size, a pool of {@code poolBytes}. */
    public static MpServerSettings defaults(long poolBytes) {
        return new MpServerSettings("127.0.0.1", DEFAULT_PORT, "127.0.0.1", DEFAULT_HTTP_PORT, DEFAULT_CHUNK_SIZE,
                poolBytes, "lmcache4j-mp-" + ProcessHandle.current().pid() + "-" + Long.toHexString(System.nanoTime()),
                Duration.ofSeconds(MpSessions.DEFAULT_TTL_SECONDS), Duration.ofSeconds(300), Duration.ZERO, 65_536, 1_024,
                1 << 22, 64 << 20, MpL2Settings.NONE, DEFAULT_CONNECTIONS);
    }

    public MpServerSettings withPorts(int port, int httpPort) {
        return new MpServerSettings(host, port, httpHost, httpPort, chunkSize, poolBytes, shmName, sessionTtl, lockTtl,
                reapTimeout, maxSessions, maxInstances, maxTokens, maxMessageBytes, l2, connections);
    }

    public MpServerSettings withHosts(String host, String httpHost) {
        return new MpServerSettings(host, port, httpHost, httpPort, chunkSize, poolBytes, shmName, sessionTtl, lockTtl,
                reapTimeout, maxSessions, maxInstances, maxTokens, maxMessageBytes, l2, connections);
    }

    public MpServerSettings withChunkSize(int chunkSize) {
        return new MpServerSettings(host, port, httpHost, httpPort, chunkSize, poolBytes, shmName, sessionTtl, lockTtl,
                reapTimeout, maxSessions, maxInstances, maxTokens, maxMessageBytes, l2, connections);
    }

    public MpServerSettings withShmName(String shmName) {
        return new MpServerSettings(host, port, httpHost, httpPort, chunkSize, poolBytes, shmName, sessionTtl, lockTtl,
                reapTimeout, maxSessions, maxInstances, maxTokens, maxMessageBytes, l2, connections);
    }

    public MpServerSettings withLifetimes(Duration sessionTtl, Duration lockTtl, Duration reapTimeout) {
        return new MpServerSettings(host, port, httpHost, httpPort, chunkSize, poolBytes, shmName, sessionTtl, lockTtl,
                reapTimeout, maxSessions, maxInstances, maxTokens, maxMessageBytes, l2, connections);
    }

    public MpServerSettings withCaps(int maxSessions, int maxInstances, int maxTokens, int maxMessageBytes) {
        return new MpServerSettings(host, port, httpHost, httpPort, chunkSize, poolBytes, shmName, sessionTtl, lockTtl,
                reapTimeout, maxSessions, maxInstances, maxTokens, maxMessageBytes, l2, connections);
    }

    /** These settings with connection limits: in all, per address, before a first message, and its timeout. */
    public MpServerSettings withConnections(int maxConnections, int maxConnectionsPerHost, int maxHandshaking,
            Duration handshakeTimeout) {
        return withConnections(new ConnectionLimits(maxConnections, maxConnectionsPerHost, maxHandshaking,
                handshakeTimeout));
    }

    public MpServerSettings withConnections(ConnectionLimits connections) {
        return new MpServerSettings(host, port, httpHost, httpPort, chunkSize, poolBytes, shmName, sessionTtl, lockTtl,
                reapTimeout, maxSessions, maxInstances, maxTokens, maxMessageBytes, l2, connections);
    }

    public MpServerSettings withL2(MpL2Settings l2) {
        return new MpServerSettings(host, port, httpHost, httpPort, chunkSize, poolBytes, shmName, sessionTtl, lockTtl,
                reapTimeout, maxSessions, maxInstances, maxTokens, maxMessageBytes, l2, connections);
    }
}
