package lmcache4j.engine.remote.redis;

import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteMetadata;

/**
 * A {@link RemoteConnector} for Redis ({@code redis://[user:pass@]host[:port][/db]}, and
 * {@code rediss://} for TLS), with LMCache's layout (spec §4.5): two keys per chunk,
 * {@code <key string>kv_bytes} (the payload) and {@code <key string>metadata} (the 28-byte
 * {@link RemoteMetadata}). Optional query parameters: {@code timeout_ms} (Lettuce's command
 * timeout, default 10000) and {@code max_inflight_mb} (a bound on payload bytes of puts in flight,
 * default 256: a put that cannot get its bytes at once fails and is dropped by the tier, so a slow
 * server cannot grow client memory without limit).
 *
 * <p>One Lettuce connection (async API, commands pipelined on it), opened lazily and reconnected
 * automatically; while it is down commands are rejected at once rather than buffered. Put encodes
 * the payload segment straight into Netty's outbound buffer (no heap copy) and sends the payload
 * SET before the metadata SET on the same connection. Get reads the metadata, asks for an object,
 * then copies the payload from Netty's receive buffer straight into the object's segment. Callers'
 * callbacks and {@code allocate} run on virtual threads, never on Lettuce's event loop.
 */
public final class RedisConnector implements RemoteConnector {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    public static final int DEFAULT_MAX_INFLIGHT_MB = 256;
    /** The sentinel port when a {@code redis-sentinel://} address names none. */
    public static final int DEFAULT_SENTINEL_PORT = 26379;
    /** The master's name when neither {@code service_name} nor {@code REDIS_SERVICE_NAME} gives one (LMCache's default). */
    public static final String DEFAULT_SENTINEL_SERVICE_NAME = "redismaster";
    static final String PAYLOAD_SUFFIX = "kv_bytes";
    static final String METADATA_SUFFIX = "metadata";

    private final String url;
    private final RedisURI redisUri;
    private final Duration timeout;
    private final int maxInflightBytes;
    private final Semaphore inflight;
    private final ClientResources resources;
    private final RedisClient client;
    private final ExecutorService executor = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("redis-connector-", 0).factory());
    private final AtomicReference<CompletableFuture<StatefulRedisConnection<byte[], ByteBuffer>>> connection =
            new AtomicReference<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    private RedisConnector(String url, RedisURI redisUri, Duration timeout, int maxInflightBytes,
                           java.nio.file.Path tlsCaFile) {
        this.url = url;
        this.redisUri = redisUri;
        this.timeout = timeout;
        this.maxInflightBytes = maxInflightBytes;
        this.inflight = new Semaphore(maxInflightBytes);
        this.resources = ClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2)
                .reconnectDelay(Delay.exponential(Duration.ofMillis(20), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS))
                .build();
        this.client = RedisClient.create(resources);
        ClientOptions.Builder options = ClientOptions.builder().autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.builder().fixedTimeout(timeout).build());
        if (tlsCaFile != null) {
            // A private CA (the usual case for a cache server): trust it instead of the JDK's store.
            options.sslOptions(io.lettuce.core.SslOptions.builder().jdkSslProvider()
                    .trustManager(tlsCaFile.toFile()).build());
        }
        client.setOptions(options.build());
    }

    /**
     * A connector for {@code redis://} or {@code rediss://} {@code [user:pass@]host[:port][/db][?timeout_ms=N&max_inflight_mb=N]}.
     * A {@code rediss://} URL may add {@code tls_ca_file=PATH}: a PEM file of the CA certificates that
     * the server's certificate must chain to (otherwise the JDK's trust store); the host name is verified.
     * {@code redis-sentinel://[user:pass@]host:port[,host:port...][/db][?service_name=NAME&...]} asks the
     * sentinels for the master of {@code NAME} (default: {@code REDIS_SERVICE_NAME}, then
     * {@code redismaster}, as LMCache), trying them in order; every reconnect asks again, so a
     * failover is followed once the old master's connection drops.
     * The connection is made lazily, so an unreachable server shows as failed operations.
     *
     * @throws IllegalArgumentException naming what is wrong with the URI
     */
    public static RedisConnector connect(URI uri) {
        Objects.requireNonNull(uri, "uri");
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(java.util.Locale.ROOT);
        boolean sentinel = scheme.equals("redis-sentinel");
        if (!scheme.equals("redis") && !scheme.equals("rediss") && !sentinel) {
            throw new IllegalArgumentException("not a redis://, rediss:// or redis-sentinel:// URL: " + redact(uri));
        }
        String userInfo;
        List<Map.Entry<String, Integer>> hosts = new ArrayList<>();
        if (sentinel) {
            // h1:p1,h2:p2 is not a server authority to java.net.URI, so it is split here.
            String raw = uri.getRawAuthority() == null ? "" : uri.getRawAuthority();
            int at = raw.lastIndexOf('@');
            userInfo = at < 0 ? null : raw.substring(0, at);
            for (String hp : raw.substring(at + 1).split(",", -1)) {
                int colon = hp.lastIndexOf(':');
                String host = colon < 0 ? hp : hp.substring(0, colon);
                int port;
                try {
                    port = colon < 0 ? DEFAULT_SENTINEL_PORT : Integer.parseInt(hp.substring(colon + 1));
                } catch (NumberFormatException e) {
                    port = -1;
                }
                if (host.isEmpty() || port < 1 || port > 65535) {
                    throw new IllegalArgumentException("redis-sentinel:// URL has a bad sentinel address '" + hp + "': "
                            + redact(uri) + " (expected redis-sentinel://[user:pass@]host:port[,host:port...][/db])");
                }
                hosts.add(Map.entry(host, port));
            }
        } else {
            if (uri.getHost() == null || uri.getHost().isEmpty()) {
                throw new IllegalArgumentException(scheme + ":// URL without a host: " + redact(uri)
                        + " (expected " + scheme + "://[user:pass@]host:port[/db])");
            }
            int port = uri.getPort() < 0 ? RedisURI.DEFAULT_REDIS_PORT : uri.getPort();
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException(scheme + ":// URL without a valid port: " + redact(uri));
            }
            userInfo = uri.getRawUserInfo();
            hosts.add(Map.entry(uri.getHost(), port));
        }
        int db = 0;
        String path = uri.getPath();
        if (path != null && !path.isEmpty() && !path.equals("/")) {
            try {
                db = Integer.parseInt(path.substring(1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(scheme + ":// URL path must be a database number: " + redact(uri));
            }
            if (db < 0) {
                throw new IllegalArgumentException(scheme + ":// URL has a negative database number: " + redact(uri));
            }
        }
        Map<String, String> q = lmcache4j.engine.remote.RemoteUrls.query(uri);
        java.nio.file.Path tlsCaFile = null;
        if (q.containsKey("tls_ca_file")) {
            if (!scheme.equals("rediss")) {
                throw new IllegalArgumentException("tls_ca_file needs a rediss:// URL, not " + redact(uri));
            }
            tlsCaFile = java.nio.file.Path.of(q.remove("tls_ca_file"));
            requireCertificates(tlsCaFile);
        }
        String serviceName = null;
        if (sentinel) {
            // LMCache reads the master's name from REDIS_SERVICE_NAME; the URL may name it instead.
            serviceName = q.containsKey("service_name") ? q.remove("service_name")
                    : Objects.requireNonNullElse(System.getenv("REDIS_SERVICE_NAME"), DEFAULT_SENTINEL_SERVICE_NAME);
            if (serviceName.isEmpty()) {
                throw new IllegalArgumentException("redis-sentinel:// service_name is empty: " + redact(uri));
            }
        }
        Duration timeout = DEFAULT_TIMEOUT;
        int maxInflightMb = DEFAULT_MAX_INFLIGHT_MB;
        try {
            if (q.containsKey("timeout_ms")) {
                timeout = Duration.ofMillis(Long.parseLong(q.remove("timeout_ms")));
            }
            if (q.containsKey("max_inflight_mb")) {
                maxInflightMb = Integer.parseInt(q.remove("max_inflight_mb"));
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(scheme + ":// URL has a non-numeric timeout_ms or max_inflight_mb: " + redact(uri));
        }
        if (!q.isEmpty()) {
            throw new IllegalArgumentException(scheme + ":// URL has unknown parameters " + q.keySet()
                    + " (known: timeout_ms, max_inflight_mb, tls_ca_file" + (sentinel ? ", service_name)" : ")"));
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException(scheme + ":// timeout_ms must be positive, was " + timeout.toMillis());
        }
        if (maxInflightMb < 1 || maxInflightMb > 2047) {
            throw new IllegalArgumentException(scheme + ":// max_inflight_mb must be in 1..2047, was " + maxInflightMb);
        }
        RedisURI.Builder b;
        if (sentinel) {
            b = RedisURI.builder().withSentinelMasterId(serviceName);
            hosts.forEach(h -> b.withSentinel(h.getKey(), h.getValue()));
        } else {
            b = RedisURI.builder().withHost(hosts.get(0).getKey()).withPort(hosts.get(0).getValue())
                    .withSsl(scheme.equals("rediss"));
        }
        b.withDatabase(db).withTimeout(timeout);
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
        String shown = scheme + "://" + String.join(",", hosts.stream().map(h -> h.getKey() + ":" + h.getValue()).toList())
                + (db == 0 ? "" : "/" + db) + (sentinel ? " (master " + serviceName + ")" : "");
        return new RedisConnector(shown, b.build(), timeout, maxInflightMb << 20, tlsCaFile);
    }

    /** Fails now, not at the first TLS handshake, when {@code file} holds no X.509 certificate. */
    private static void requireCertificates(java.nio.file.Path file) {
        try (java.io.InputStream in = java.nio.file.Files.newInputStream(file)) {
            if (java.security.cert.CertificateFactory.getInstance("X.509").generateCertificates(in).isEmpty()) {
                throw new IllegalArgumentException("rediss:// tls_ca_file holds no certificate: " + file);
            }
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("rediss:// tls_ca_file is not a readable file: " + file + " (" + e + ")");
        } catch (java.security.cert.CertificateException e) {
            throw new IllegalArgumentException("rediss:// tls_ca_file is not PEM or DER X.509 certificates: " + file
                    + " (" + e.getMessage() + ")");
        }
    }

    /** The URI without credentials or query. */
    private static String redact(URI uri) {
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

    private CompletableFuture<RedisAsyncCommands<byte[], ByteBuffer>> commands() {
        if (closed.get()) {
            return CompletableFuture.failedFuture(new IllegalStateException("redis connector " + url + " is closed"));
        }
        while (true) {
            CompletableFuture<StatefulRedisConnection<byte[], ByteBuffer>> current = connection.get();
            if (current != null && !current.isCompletedExceptionally()) {
                return current.thenApply(StatefulRedisConnection::async);
            }
            CompletableFuture<StatefulRedisConnection<byte[], ByteBuffer>> next = new CompletableFuture<>();
            if (connection.compareAndSet(current, next)) {
                try {
                    client.connectAsync(RedisBytesCodec.INSTANCE, redisUri).whenComplete((c, e) -> {
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
                return next.thenApply(StatefulRedisConnection::async);
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
            byte[] payloadKey = payloadKey(key);
            byte[] metaKey = metadataKey(key);
            ByteBuffer body = payload.asByteBuffer();
            ByteBuffer head = ByteBuffer.wrap(metadata.toBytes());
            CompletableFuture<Void> done = commands().thenCompose(c -> {
                // Same connection, payload first: a visible metadata implies a payload.
                CompletableFuture<String> p = c.set(payloadKey, body).toCompletableFuture();
                CompletableFuture<String> m = c.set(metaKey, head).toCompletableFuture();
                return CompletableFuture.allOf(p, m);
            });
            done.whenComplete((v, e) -> inflight.release(permits));
            return off(done);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Optional<MemoryObj>> get(CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
        try {
            byte[] payloadKey = payloadKey(key);
            byte[] metaKey = metadataKey(key);
            CompletableFuture<Optional<MemoryObj>> result = commands().thenCompose(c -> c.get(metaKey).toCompletableFuture()
                    .thenComposeAsync(raw -> {
                        if (raw == null) {
                            return CompletableFuture.completedFuture(Optional.<MemoryObj>empty());
                        }
                        RemoteMetadata meta;
                        try {
                            meta = RemoteMetadata.decode(raw);
                        } catch (IllegalArgumentException e) {
                            throw new CompletionException(new java.io.IOException("redis key " + key.toKeyString()
                                    + METADATA_SUFFIX + " holds " + e.getMessage(), e));
                        }
                        Optional<MemoryObj> obj = allocate.apply(meta);
                        if (obj.isEmpty() || obj.get().byteSize() < meta.length()) {
                            obj.ifPresent(MemoryObj::release);
                            return CompletableFuture.completedFuture(Optional.<MemoryObj>empty());
                        }
                        return readPayload(c, payloadKey, metaKey, meta, obj.get());
                    }, executor));
            return off(result);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private CompletableFuture<Optional<MemoryObj>> readPayload(RedisAsyncCommands<byte[], ByteBuffer> c, byte[] payloadKey,
            byte[] metaKey, RemoteMetadata meta, MemoryObj obj) {
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
        return read.orTimeout(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS).handle((n, e) -> {
            if (e == null && n != null && n == meta.length()) {
                return CompletableFuture.completedFuture(Optional.of(obj));
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
        }).thenCompose(Function.identity());
    }

    @Override
    public CompletableFuture<Boolean> remove(CacheKey key) {
        try {
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
        CompletableFuture<StatefulRedisConnection<byte[], ByteBuffer>> c = connection.getAndSet(null);
        if (c != null) {
            c.thenAccept(StatefulRedisConnection::close);
        }
        try {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        } catch (RuntimeException ignored) {
            // closing anyway
        }
        try {
            resources.shutdown(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(3, TimeUnit.SECONDS);
        } catch (Exception ignored) {
            // closing anyway
        }
        executor.shutdown();
    }

    /** A put refused because {@code max_inflight_mb} of puts are already in flight. */
    public static final class RedisBackpressureException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RedisBackpressureException(String message) {
            super(message);
        }
    }
}
