package lmcache4j.engine.remote.redis;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteMetadata;

/**
 * A {@link RemoteConnector} for Redis and Valkey ({@code redis://[user:pass@]host[:port][/db]},
 * {@code rediss://} for TLS, {@code redis-sentinel://} and {@code redis-cluster://}), with LMCache's
 * layout (spec §4.7): two keys per chunk, {@code <key string>kv_bytes} (the payload) and
 * {@code <key string>metadata} (the 28-byte {@link RemoteMetadata}, followed by lmcache4j's CRC32C
 * trailer, which LMCache's reader ignores: {@link MetadataTrailer}). Optional query parameters:
 * {@code timeout_ms} (Lettuce's command timeout, default 10000), {@code max_inflight_mb} (a bound on
 * payload bytes of puts in flight, default 256: a put that cannot get its bytes at once fails and is
 * dropped by the tier, so a slow server cannot grow client memory without limit) and
 * {@code checksum} ({@code crc32c}, the default, or {@code none} to write LMCache's bare header).
 *
 * <p>One Lettuce connection (async API, commands pipelined on it; for a cluster, one per master
 * behind one routing connection), opened lazily and reconnected automatically; while it is down
 * commands are rejected at once rather than buffered. Put encodes the payload segment straight into
 * Netty's outbound buffer (no heap copy) and writes the payload before the metadata: pipelined on the
 * same connection for one server, the metadata SET only after the payload SET completed for a cluster
 * (the two keys usually live on different nodes). Get reads the metadata, asks for an object, then
 * copies the payload from Netty's receive buffer straight into the object's segment and checks its
 * CRC32C when the metadata carries one; a mismatch is a miss that deletes the entry. Callers'
 * callbacks, {@code allocate} and the checksum run on virtual threads, never on Lettuce's event loop.
 *
 * <p>That is the default {@link RedisLayout.Single} layout. With {@link RedisLayout.Split}
 * ({@link #connect(URI, RedisLayout)}, {@code extra_config.redis_layout: split}) the connector keeps
 * that many connections and stores each chunk as parts plus a manifest ({@link SplitChunkStore}).
 */
public final class RedisConnector implements RemoteConnector {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    public static final int DEFAULT_MAX_INFLIGHT_MB = 256;
    /** The sentinel port when a {@code redis-sentinel://} address names none. */
    public static final int DEFAULT_SENTINEL_PORT = 26379;
    /** The master's name when neither {@code service_name} nor {@code REDIS_SERVICE_NAME} gives one (LMCache's default). */
    public static final String DEFAULT_SENTINEL_SERVICE_NAME = "redismaster";
    /** The port of a {@code redis-cluster://} seed that names none. */
    public static final int DEFAULT_CLUSTER_PORT = RedisURI.DEFAULT_REDIS_PORT;
    static final String PAYLOAD_SUFFIX = "kv_bytes";
    static final String METADATA_SUFFIX = "metadata";

    private static final System.Logger LOG = System.getLogger(RedisConnector.class.getName());
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);

    private final String url;
    private final RedisEndpoint endpoint;
    private final Duration timeout;
    private final int maxInflightBytes;
    private final boolean writeChecksum;
    private final Semaphore inflight;
    private final OwnedThreads threads = new OwnedThreads();
    private final ExecutorService executor = Executors.newThreadPerTaskExecutor(threads.virtualFactory("redis-connector"));
    /** {@link #executor}, or the calling thread once it is shut down: a callback that releases memory always runs. */
    private final Executor callbacks = task -> {
        try {
            executor.execute(task);
        } catch (RejectedExecutionException closed) {
            task.run();
        }
    };
    /** The layout's connections, each opened lazily and made again after a failed attempt. */
    private final List<AtomicReference<CompletableFuture<StatefulConnection<byte[], ByteBuffer>>>> connections;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final RedisLayout layout;
    /** The split layout's operations; null for LMCache's single-value layout, which this class implements itself. */
    private final SplitChunkStore split;

    private RedisConnector(String url, RedisEndpoint endpoint, Duration timeout, int maxInflightBytes, boolean writeChecksum,
                           RedisLayout layout) {
        this.url = url;
        this.endpoint = endpoint;
        this.timeout = timeout;
        this.maxInflightBytes = maxInflightBytes;
        this.writeChecksum = writeChecksum;
        this.inflight = new Semaphore(maxInflightBytes);
        this.layout = layout;
        List<AtomicReference<CompletableFuture<StatefulConnection<byte[], ByteBuffer>>>> c = new ArrayList<>();
        for (int i = 0; i < layout.connections(); i++) {
            c.add(new AtomicReference<>());
        }
        this.connections = List.copyOf(c);
        this.split = layout instanceof RedisLayout.Split s ? new SplitChunkStore(url, s, this::commands, callbacks, timeout,
                endpoint::serverOfSlot) : null;
    }

    /**
     * A connector for {@code redis://} or {@code rediss://}
     * {@code [user:pass@]host[:port][/db][?timeout_ms=N&max_inflight_mb=N&checksum=crc32c|none]}.
     * A {@code rediss://} URL may add {@code tls_ca_file=PATH}: a PEM file of the CA certificates that
     * the server's certificate must chain to (otherwise the JDK's trust store); the host name is verified.
     * {@code redis-sentinel://[user:pass@]host:port[,host:port...][/db][?service_name=NAME&...]} asks the
     * sentinels for the master of {@code NAME} (default: {@code REDIS_SERVICE_NAME}, then
     * {@code redismaster}, as LMCache), trying them in order; every reconnect asks again, so a
     * failover is followed once the old master's connection drops.
     * {@code redis-cluster://[user:pass@]host[:port][,host[:port]...][?...]} names seed nodes of a Redis
     * Cluster (port 6379 when omitted; no database number, a cluster has only 0).
     * The connection is made lazily, so an unreachable server shows as failed operations.
     *
     * @throws IllegalArgumentException naming what is wrong with the URI
     */
    public static RedisConnector connect(URI uri) {
        return connect(uri, RedisLayout.single());
    }

    /**
     * As {@link #connect(URI)}, storing chunks in {@code layout} ({@code extra_config.redis_layout}):
     * LMCache's single-value layout, or the split layout of parts plus a manifest over several connections.
     *
     * @throws IllegalArgumentException naming what is wrong with the URI
     */
    public static RedisConnector connect(URI uri, RedisLayout layout) {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(layout, "layout");
        RedisUrl url = RedisUrl.parse(uri);
        return new RedisConnector(url.shown(), url.endpoint(), url.timeout(), url.maxInflightMb() << 20, url.checksum(),
                layout);
    }

    /** {@code b} with the URL's {@code user:pass} or {@code pass} (percent-decoded), if any. */
    static RedisURI.Builder withCredentials(RedisURI.Builder b, String userInfo) {
        if (userInfo != null && !userInfo.isEmpty()) {
            int colon = userInfo.indexOf(':');
            String user = colon < 0 ? "" : URLDecoder.decode(userInfo.substring(0, colon), StandardCharsets.UTF_8);
            String pass = URLDecoder.decode(colon < 0 ? userInfo : userInfo.substring(colon + 1), StandardCharsets.UTF_8);
            if (user.isEmpty()) {
                b.withPassword(pass.toCharArray());
            } else {
                b.withAuthentication(user, pass.toCharArray());
            }
        }
        return b;
    }

    /** Fails now, not at the first TLS handshake, when {@code file} holds no X.509 certificate. */
    static void requireCertificates(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            if (CertificateFactory.getInstance("X.509").generateCertificates(in).isEmpty()) {
                throw new IllegalArgumentException("rediss:// tls_ca_file holds no certificate: " + file);
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("rediss:// tls_ca_file is not a readable file: " + file + " (" + e + ")");
        } catch (CertificateException e) {
            throw new IllegalArgumentException("rediss:// tls_ca_file is not PEM or DER X.509 certificates: " + file
                    + " (" + e.getMessage() + ")");
        }
    }

    /** The URI without credentials or query. */
    static String redact(URI uri) {
        return uri.getScheme() + "://" + (uri.getHost() == null ? uri.getRawAuthority() == null ? ""
                : uri.getRawAuthority().replaceAll("^.*@", "") : uri.getHost() + (uri.getPort() < 0 ? "" : ":" + uri.getPort()))
                + (uri.getRawPath() == null ? "" : uri.getRawPath());
    }

    @Override
    public String url() {
        return url;
    }

    /** The payload key of {@code key}: {@code <key string>kv_bytes}. */
    static byte[] payloadKey(CacheKey key) {
        return (key.toKeyString() + PAYLOAD_SUFFIX).getBytes(StandardCharsets.UTF_8);
    }

    /** The metadata key of {@code key}: {@code <key string>metadata}. */
    static byte[] metadataKey(CacheKey key) {
        return (key.toKeyString() + METADATA_SUFFIX).getBytes(StandardCharsets.UTF_8);
    }

    // ---- connection ----------------------------------------------------------------------------

    /** The layout in use. */
    public RedisLayout layout() {
        return layout;
    }

    private CompletableFuture<RedisClusterAsyncCommands<byte[], ByteBuffer>> commands() {
        return commands(0);
    }

    /** The commands of connection {@code index} of the layout's connections. */
    private CompletableFuture<RedisClusterAsyncCommands<byte[], ByteBuffer>> commands(int index) {
        AtomicReference<CompletableFuture<StatefulConnection<byte[], ByteBuffer>>> connection = connections.get(index);
        if (closed.get()) {
            return CompletableFuture.failedFuture(new IllegalStateException("redis connector " + url + " is closed"));
        }
        while (true) {
            CompletableFuture<StatefulConnection<byte[], ByteBuffer>> current = connection.get();
            if (current != null && !current.isCompletedExceptionally()) {
                return current.thenApply(endpoint::commands);
            }
            CompletableFuture<StatefulConnection<byte[], ByteBuffer>> next = new CompletableFuture<>();
            if (connection.compareAndSet(current, next)) {
                try {
                    endpoint.connect().whenComplete((c, e) -> {
                        if (e != null) {
                            next.completeExceptionally(e);
                        } else if (closed.get()) {
                            c.closeAsync();
                            next.completeExceptionally(new IllegalStateException("redis connector " + url + " is closed"));
                        } else {
                            next.complete(c);
                        }
                    });
                } catch (RuntimeException e) {
                    next.completeExceptionally(e);
                }
                return next.thenApply(endpoint::commands);
            }
        }
    }

    /** {@code f} completed on a virtual thread, never on Lettuce's event loop, within the timeout (plus a margin). */
    private <T> CompletableFuture<T> off(CompletableFuture<T> f) {
        CompletableFuture<T> out = new CompletableFuture<>();
        f.orTimeout(timeout.toMillis() + 2000, TimeUnit.MILLISECONDS).whenComplete((v, e) -> {
            try {
                executor.execute(() -> complete(out, v, e));
            } catch (RuntimeException rejected) { // closed: complete here
                complete(out, v, e);
            }
        });
        return out;
    }

    private static <T> void complete(CompletableFuture<T> out, T v, Throwable e) {
        if (e != null) {
            out.completeExceptionally(e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
        } else {
            out.complete(v);
        }
    }

    // ---- operations ----------------------------------------------------------------------------

    @Override
    public CompletableFuture<Boolean> exists(CacheKey key) {
        try {
            if (split != null) {
                return off(split.exists(key));
            }
            byte[] metaKey = metadataKey(key);
            return off(commands().thenCompose(c -> c.exists(metaKey).toCompletableFuture()).thenApply(n -> n != null && n > 0));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Void> put(CacheKey key, RemoteMetadata metadata, MemorySegment payload) {
        try {
            if (payload.byteSize() != metadata.length()) {
                return CompletableFuture.failedFuture(new IllegalArgumentException("payload is " + payload.byteSize()
                        + " bytes, metadata says " + metadata.length()));
            }
            int permits = (int) Math.min(payload.byteSize(), maxInflightBytes);
            if (!inflight.tryAcquire(permits)) {
                return CompletableFuture.failedFuture(new RedisBackpressureException("redis connector " + url + ": "
                        + (maxInflightBytes - inflight.availablePermits()) + " bytes of puts in flight, limit "
                        + maxInflightBytes + " (max_inflight_mb); put of " + payload.byteSize() + " bytes dropped"));
            }
            CompletableFuture<Void> done;
            try {
                done = split != null ? split.put(key, metadata, payload) : putSingle(key, metadata, payload);
            } catch (RuntimeException e) {
                inflight.release(permits);
                throw e;
            }
            done.whenComplete((v, e) -> inflight.release(permits));
            return off(done);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** A put in LMCache's layout: the payload value, then the metadata value. */
    private CompletableFuture<Void> putSingle(CacheKey key, RemoteMetadata metadata, MemorySegment payload) {
        byte[] payloadKey = payloadKey(key);
        byte[] metaKey = metadataKey(key);
        ByteBuffer body = payload.asByteBuffer();
        // The CRC (about 1 ms for a 32 MiB chunk) runs on a virtual thread: puts are asynchronous,
        // and the caller is the engine's store path.
        CompletableFuture<ByteBuffer> metadataValue = writeChecksum
                ? CompletableFuture.supplyAsync(() -> ByteBuffer.wrap(MetadataTrailer.metadataValue(metadata, payload)), callbacks)
                : CompletableFuture.completedFuture(ByteBuffer.wrap(metadata.toBytes()));
        return metadataValue.thenCompose(head -> commands().thenCompose(c -> {
            // Payload first, so that a visible metadata implies a payload: one server applies
            // pipelined commands in order; a cluster may route the two keys to two nodes.
            CompletableFuture<String> p = c.set(payloadKey, body).toCompletableFuture();
            if (!endpoint.ordersPipelinedCommands()) {
                return p.thenCompose(ok -> c.set(metaKey, head).toCompletableFuture()).thenApply(ok -> null);
            }
            CompletableFuture<String> m = c.set(metaKey, head).toCompletableFuture();
            return CompletableFuture.allOf(p, m);
        }));
    }

    @Override
    public CompletableFuture<Optional<MemoryObj>> get(CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
        try {
            if (split != null) {
                return off(split.get(key, allocate));
            }
            byte[] payloadKey = payloadKey(key);
            byte[] metaKey = metadataKey(key);
            CompletableFuture<Optional<MemoryObj>> result = commands().thenCompose(c -> c.get(metaKey).toCompletableFuture()
                    .thenComposeAsync(raw -> {
                        if (raw == null) {
                            return CompletableFuture.completedFuture(Optional.<MemoryObj>empty());
                        }
                        RemoteMetadata meta;
                        long crc = MetadataTrailer.crcOf(raw);
                        try {
                            meta = RemoteMetadata.decode(raw);
                        } catch (IllegalArgumentException e) {
                            throw new CompletionException(new IOException("redis key " + key.toKeyString()
                                    + METADATA_SUFFIX + " holds " + e.getMessage(), e));
                        }
                        Optional<MemoryObj> obj = allocate.apply(meta);
                        if (obj.isEmpty() || obj.get().byteSize() < meta.length()) {
                            obj.ifPresent(MemoryObj::release);
                            return CompletableFuture.completedFuture(Optional.<MemoryObj>empty());
                        }
                        return readPayload(c, key, payloadKey, metaKey, meta, crc, obj.get());
                    }, callbacks));
            return off(result);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private CompletableFuture<Optional<MemoryObj>> readPayload(RedisClusterAsyncCommands<byte[], ByteBuffer> c, CacheKey key,
            byte[] payloadKey, byte[] metaKey, RemoteMetadata meta, long expectedCrc, MemoryObj obj) {
        SegmentOutput out = new SegmentOutput(obj.segment().asSlice(0, meta.length()));
        CompletableFuture<Long> read;
        try {
            read = c.dispatch(CommandType.GET, out, new CommandArgs<>(RedisBytesCodec.INSTANCE).addKey(payloadKey))
                    .toCompletableFuture();
        } catch (RuntimeException e) {
            out.cancel();
            obj.release();
            return CompletableFuture.failedFuture(e);
        }
        return read.orTimeout(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS).handleAsync((n, e) -> {
            if (e == null && n != null && n == meta.length()) {
                long actual = expectedCrc == MetadataTrailer.ABSENT ? expectedCrc
                        : MetadataTrailer.crc32c(obj.segment().asSlice(0, meta.length()));
                if (actual == expectedCrc) {
                    return CompletableFuture.completedFuture(Optional.of(obj));
                }
                obj.release();
                LOG.log(System.Logger.Level.WARNING, () -> String.format("redis %s: %s%s fails its CRC32C (metadata %08x, "
                        + "payload %08x); deleted, served as a miss", url, key.toKeyString(), PAYLOAD_SUFFIX, expectedCrc, actual));
                return c.del(metaKey, payloadKey).toCompletableFuture().handle((d, de) -> Optional.<MemoryObj>empty());
            }
            out.cancel(); // after this no late reply writes into the object
            obj.release();
            if (e != null) {
                return CompletableFuture.<Optional<MemoryObj>>failedFuture(
                        e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
            }
            if (n != null && n == SegmentOutput.ABSENT) {
                // A metadata whose payload is gone (evicted, or a failed put): delete the orphan, then miss.
                return c.del(metaKey).toCompletableFuture().handle((d, de) -> Optional.<MemoryObj>empty());
            }
            return CompletableFuture.completedFuture(Optional.<MemoryObj>empty());
        }, callbacks).thenCompose(Function.identity());
    }

    @Override
    public CompletableFuture<Boolean> remove(CacheKey key) {
        try {
            if (split != null) {
                return off(split.remove(key));
            }
            byte[] payloadKey = payloadKey(key);
            byte[] metaKey = metadataKey(key);
            return off(commands().thenCompose(c -> c.del(metaKey, payloadKey).toCompletableFuture())
                    .thenApply(n -> n != null && n > 0));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Void> ping() {
        try {
            return off(commands().thenCompose(c -> c.ping().toCompletableFuture()).thenApply(pong -> null));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Payload bytes of puts in flight now (for tests and metrics). */
    public long inflightBytes() {
        return maxInflightBytes - inflight.availablePermits();
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (AtomicReference<CompletableFuture<StatefulConnection<byte[], ByteBuffer>>> connection : connections) {
            CompletableFuture<StatefulConnection<byte[], ByteBuffer>> c = connection.getAndSet(null);
            if (c != null) {
                c.thenAccept(StatefulConnection::close);
            }
        }
        endpoint.shutdown(); // waits for Lettuce's own threads
        executor.shutdown();
        threads.join(JOIN_BOUND);
    }

    /** A put refused because {@code max_inflight_mb} of puts are already in flight. */
    public static final class RedisBackpressureException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RedisBackpressureException(String message) {
            super(message);
        }
    }
}
