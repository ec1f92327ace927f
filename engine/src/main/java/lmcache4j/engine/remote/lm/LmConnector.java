package lmcache4j.engine.remote.lm;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.zip.CRC32C;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteMetadata;

/**
 * A {@link RemoteConnector} for LMCache's {@code lm://host:port} cache server (lmcache4j's, in the
 * {@code lmcache4j.server} module, or LMCache's own; spec §4.9). Optional query parameters: {@code token} (the server's shared
 * secret), {@code timeout_ms} (per operation, default 10000), {@code pool} (connections, default 4).
 *
 * <p>With a token, every new connection starts with {@link LmSession}'s challenge-response: the
 * server must prove it holds the token before this client proves it does, the token itself never
 * crosses the wire, and every payload either way carries a {@link PayloadTag}. A server that cannot
 * prove itself, or a payload whose tag does not check out, fails the operation; nothing it sent is
 * kept.
 *
 * <p>A pool of blocking connections, each used by one operation at a time, on a small executor
 * with one thread per connection. Reply headers and payloads are read in loops until every byte
 * has arrived (LMCache's client does a single {@code recv}). Put writes the header and the
 * payload segment's own buffer (no heap copy), then an EXIST for the same key: the protocol's PUT
 * has no reply, and the EXIST's answer is what makes a completed put mean "stored". Get reads
 * straight into the allocated object's segment. A connection that fails or times out mid-operation is closed and replaced later.
 */
public final class LmConnector implements RemoteConnector {
    /** The default per-operation timeout. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    public static final int DEFAULT_POOL = 4;
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);

    private final InetSocketAddress address;
    private final Optional<String> token;
    private final Duration timeout;
    private final ConcurrentLinkedQueue<Conn> idle = new ConcurrentLinkedQueue<>();
    private final Set<SocketChannel> all = ConcurrentHashMap.newKeySet();
    private final OwnedThreads threads = new OwnedThreads();
    private final ExecutorService executor;
    private final ScheduledExecutorService watchdog;
    private final AtomicBoolean closed = new AtomicBoolean();

    public LmConnector(InetSocketAddress address, Optional<String> token, Duration timeout, int poolSize) {
        this.address = Objects.requireNonNull(address, "address");
        this.token = Objects.requireNonNull(token, "token");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        if (poolSize < 1) {
            throw new IllegalArgumentException("pool size must be >= 1, was " + poolSize);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, was " + timeout);
        }
        this.executor = Executors.newFixedThreadPool(poolSize, threads.platformFactory("lm-connector-" + address.getPort()));
        this.watchdog = Executors.newSingleThreadScheduledExecutor(r -> threads.platform("lm-connector-watchdog", r));
    }

    /**
     * A connector for {@code lm://host:port[?token=T&timeout_ms=N&pool=N]}. Connections are made
     * lazily, so an unreachable server shows as failed operations (and a failing {@link #ping()}).
     *
     * @throws IllegalArgumentException naming what is wrong with the URI
     */
    public static LmConnector connect(URI uri) {
        Objects.requireNonNull(uri, "uri");
        if (!"lm".equalsIgnoreCase(uri.getScheme())) {
            throw new IllegalArgumentException("not an lm:// URL: " + redact(uri) + " (expected lm://host:port)");
        }
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            throw new IllegalArgumentException("lm:// URL without a host: " + redact(uri) + " (expected lm://host:port)");
        }
        if (uri.getPort() < 1 || uri.getPort() > 65535) {
            throw new IllegalArgumentException("lm:// URL without a valid port: " + redact(uri) + " (expected lm://host:port)");
        }
        if (uri.getPath() != null && !uri.getPath().isEmpty() && !uri.getPath().equals("/")) {
            throw new IllegalArgumentException("lm:// URL has a path, which the protocol has no use for: " + redact(uri));
        }
        Map<String, String> q = lmcache4j.engine.remote.RemoteUrls.query(uri);
        Optional<String> token = Optional.ofNullable(q.remove("token"));
        if (token.isPresent() && token.get().isEmpty()) {
            throw new IllegalArgumentException("lm:// URL has an empty token");
        }
        Duration timeout = DEFAULT_TIMEOUT;
        int pool = DEFAULT_POOL;
        try {
            if (q.containsKey("timeout_ms")) {
                timeout = Duration.ofMillis(Long.parseLong(q.remove("timeout_ms")));
            }
            if (q.containsKey("pool")) {
                pool = Integer.parseInt(q.remove("pool"));
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("lm:// URL has a non-numeric timeout_ms or pool: " + redact(uri));
        }
        if (!q.isEmpty()) {
            throw new IllegalArgumentException("lm:// URL has unknown parameters " + q.keySet()
                    + " (known: token, timeout_ms, pool)");
        }
        return new LmConnector(new InetSocketAddress(uri.getHost(), uri.getPort()), token, timeout, pool);
    }

    private static String redact(URI uri) {
        return uri.getRawQuery() == null ? uri.toString() : uri.toString().replace(uri.getRawQuery(), "...");
    }

    @Override
    public String url() {
        return "lm://" + address.getHostString() + ":" + address.getPort();
    }

    @Override
    public CompletableFuture<Boolean> exists(CacheKey key) {
        return submit(c -> {
            write(c.ch(), LmProtocol.encodeClient(LmProtocol.EXIST, 0, key.toKeyString()));
            return LmProtocol.replyCode(readReply(c.ch())) == LmProtocol.SUCCESS;
        });
    }

    @Override
    public CompletableFuture<Void> put(CacheKey key, RemoteMetadata metadata, MemorySegment payload) {
        return submit(c -> {
            SocketChannel ch = c.ch();
            if (payload.byteSize() != metadata.length()) {
                throw new IllegalArgumentException("payload is " + payload.byteSize() + " bytes, metadata says "
                        + metadata.length());
            }
            String keyString = key.toKeyString();
            byte[] head = LmProtocol.encodeClient(LmProtocol.PUT, metadata, keyString);
            // A PUT has no reply: an EXIST on the same connection, which the server answers only
            // after it has handled the PUT, tells whether the chunk was stored, so a completed
            // put means stored (not merely sent) and a refused one is a failed put.
            ByteBuffer exist = ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.EXIST, 0, keyString));
            if (c.session() == null) {
                LmProtocol.writeFully(ch, ByteBuffer.wrap(head), payload.asByteBuffer(), exist);
            } else {
                byte[] tag = c.session().clientToServer().next().update(head).update(payload.asByteBuffer()).finish();
                LmProtocol.writeFully(ch, ByteBuffer.wrap(head), payload.asByteBuffer(), ByteBuffer.wrap(tag), exist);
            }
            if (LmProtocol.replyCode(readReply(ch)) != LmProtocol.SUCCESS) {
                throw new IOException("lm:// server " + url() + " did not store " + keyString
                        + " (it refused " + metadata.length() + " bytes it had no room for, or evicted them at once)");
            }
            return null;
        });
    }

    @Override
    public CompletableFuture<Optional<MemoryObj>> get(CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
        return submit(c -> receive(c, key, allocate, null).map(Received::obj));
    }

    /**
     * A chunk, the last field of its reply header ({@code location}: LMCache's server leaves it 0,
     * lmcache4j's P2P transfer servers put the payload's CRC32C there), and the CRC32C of the payload
     * as it arrived.
     *
     * @param obj      the chunk, with a reference for the caller
     * @param tag      the reply header's {@code location} field
     * @param received CRC32C of the payload bytes received
     */
    public record CheckedChunk(MemoryObj obj, int tag, int received) {
    }

    /** Bytes read before they are summed: small enough to be summed while still in cache. */
    private static final int SUM_SLICE_BYTES = 1 << 20;

    /**
     * As {@link #get}, summing the payload (CRC32C) slice by slice as it arrives, while each slice is
     * still in cache, and keeping the reply header's {@code location} field ({@link CheckedChunk}).
     */
    public CompletableFuture<Optional<CheckedChunk>> getChecked(CacheKey key,
                                                                Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
        return submit(c -> {
            CRC32C crc = new CRC32C();
            return receive(c, key, allocate, crc)
                    .map(r -> new CheckedChunk(r.obj(), LmProtocol.replyLocation(r.reply()), (int) crc.getValue()));
        });
    }

    /** A chunk read into memory {@code allocate} gave, and the reply header it came with. */
    private record Received(MemoryObj obj, byte[] reply) {
    }

    /**
     * GET: the reply, and when the server has the chunk and {@code allocate} gives room for it, the
     * payload read into that room ({@code sum}, when given, updated slice by slice as it arrives);
     * empty for a miss or no room (the payload is then skipped, keeping the connection in step).
     */
    private Optional<Received> receive(Conn c, CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate,
                                       CRC32C sum) throws IOException {
        SocketChannel ch = c.ch();
        byte[] request = LmProtocol.encodeClient(LmProtocol.GET, 0, key.toKeyString());
        write(ch, request);
        byte[] reply = readReply(ch);
        if (LmProtocol.replyCode(reply) != LmProtocol.SUCCESS) {
            return Optional.empty();
        }
        RemoteMetadata meta;
        try {
            meta = LmProtocol.replyMetadata(reply);
        } catch (IllegalArgumentException e) {
            throw new IOException("lm:// server sent a malformed reply: " + e.getMessage(), e);
        }
        PayloadTag.Message tag = c.session() == null ? null : c.session().serverToClient().next().update(request).update(reply);
        int trailer = tag == null ? 0 : PayloadTag.BYTES;
        Optional<MemoryObj> obj = allocate.apply(meta);
        if (obj.isEmpty() || obj.get().byteSize() < meta.length()) {
            obj.ifPresent(MemoryObj::release);
            LmProtocol.skipFully(ch, (long) meta.length() + trailer); // keep the connection in step
            return Optional.empty();
        }
        try {
            MemorySegment into = obj.get().segment();
            if (sum == null && tag == null) {
                LmProtocol.readFully(ch, into.asSlice(0, meta.length()).asByteBuffer());
            } else {
                // Each slice is summed and tagged while it is still in cache.
                for (long at = 0; at < meta.length(); at += SUM_SLICE_BYTES) {
                    ByteBuffer slice = into.asSlice(at, Math.min(SUM_SLICE_BYTES, meta.length() - at)).asByteBuffer();
                    LmProtocol.readFully(ch, slice);
                    slice.flip();
                    if (tag != null) {
                        tag.update(slice.duplicate());
                    }
                    if (sum != null) {
                        sum.update(slice);
                    }
                }
            }
            if (tag != null && !tag.verify(LmProtocol.readFully(ch, PayloadTag.BYTES))) {
                throw new IOException("lm:// server " + url() + " sent " + key.toKeyString()
                        + " with a tag that does not check out (altered in transit, or not from a holder of the token)");
            }
        } catch (IOException | RuntimeException e) {
            obj.get().release();
            throw e;
        }
        return Optional.of(new Received(obj.get(), reply));
    }

    @Override
    public CompletableFuture<Boolean> remove(CacheKey key) {
        return submit(c -> {
            write(c.ch(), LmProtocol.encodeClient(LmProtocol.REMOVE, 0, key.toKeyString()));
            return LmProtocol.replyCode(readReply(c.ch())) == LmProtocol.SUCCESS;
        });
    }

    @Override
    public CompletableFuture<Void> ping() {
        return submit(c -> {
            write(c.ch(), LmProtocol.encodeClient(LmProtocol.HEALTH, 0, LmProtocol.PLACEHOLDER_KEY));
            int code = LmProtocol.replyCode(readReply(c.ch()));
            if (code != LmProtocol.SUCCESS) {
                throw new IOException("lm:// server " + url() + " answered HEALTH with " + code);
            }
            return null;
        });
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        executor.shutdownNow();
        watchdog.shutdownNow();
        for (SocketChannel ch : all) {
            closeQuietly(ch); // an operation blocked on its socket fails now
        }
        idle.clear();
        threads.join(JOIN_BOUND);
    }

    @Override
    public String toString() {
        return "LmConnector[" + url() + "]";
    }

    // ---- plumbing -------------------------------------------------------------------------------

    @FunctionalInterface
    private interface Op<T> {
        T run(Conn c) throws Exception;
    }

    /** A connection and, when the server has a token, the session its handshake established (else null). */
    private record Conn(SocketChannel ch, LmSession session) {
    }

    private <T> CompletableFuture<T> submit(Op<T> op) {
        CompletableFuture<T> f = new CompletableFuture<>();
        if (closed.get()) {
            f.completeExceptionally(new IllegalStateException(this + " is closed"));
            return f;
        }
        try {
            executor.execute(() -> runOp(op, f));
        } catch (RejectedExecutionException e) {
            f.completeExceptionally(new IllegalStateException(this + " is closed", e));
        }
        return f;
    }

    private <T> void runOp(Op<T> op, CompletableFuture<T> f) {
        Conn ch = null;
        AtomicBoolean timedOut = new AtomicBoolean();
        ScheduledFuture<?> timer = null;
        try {
            if (closed.get()) {
                throw new IllegalStateException(this + " is closed");
            }
            ch = acquire();
            SocketChannel watched = ch.ch();
            timer = watchdog.schedule(() -> {
                timedOut.set(true);
                closeQuietly(watched);
            }, timeout.toMillis(), TimeUnit.MILLISECONDS);
            T result = op.run(ch);
            timer.cancel(false);
            if (timedOut.get() || closed.get()) {
                throw new IOException("lm:// operation on " + url() + " timed out after " + timeout.toMillis() + " ms");
            }
            idle.add(ch);
            ch = null;
            f.complete(result);
        } catch (Throwable e) {
            if (timer != null) {
                timer.cancel(false);
            }
            if (ch != null) {
                closeQuietly(ch.ch());
            }
            if (timedOut.get()) {
                f.completeExceptionally(new IOException("lm:// operation on " + url() + " timed out after "
                        + timeout.toMillis() + " ms", e));
            } else {
                f.completeExceptionally(e);
            }
        }
    }

    private Conn acquire() throws IOException {
        Conn c;
        while ((c = idle.poll()) != null) {
            if (c.ch().isOpen() && stillConnected(c.ch())) {
                return c;
            }
            closeQuietly(c.ch());
        }
        SocketChannel ch = SocketChannel.open();
        all.add(ch);
        SocketChannel opened = ch;
        ScheduledFuture<?> timer = watchdog.schedule(() -> closeQuietly(opened), timeout.toMillis(), TimeUnit.MILLISECONDS);
        try {
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.connect(address);
            LmSession session = token.isPresent() ? handshake(ch, token.get().getBytes(StandardCharsets.UTF_8)) : null;
            timer.cancel(false);
            return new Conn(ch, session);
        } catch (LmSession.AuthenticationException e) {
            timer.cancel(false);
            closeQuietly(ch);
            throw e;
        } catch (IOException | RuntimeException e) {
            timer.cancel(false);
            closeQuietly(ch);
            throw new IOException("cannot connect to lm:// server " + url() + ": " + e, e);
        }
    }

    /** {@link LmSession#authenticate}, its failure naming this server. */
    private LmSession handshake(SocketChannel ch, byte[] token) throws IOException {
        try {
            return LmSession.authenticate(ch, token);
        } catch (LmSession.AuthenticationException e) {
            throw new LmSession.AuthenticationException("lm:// server " + url() + " " + e.getMessage());
        }
    }

    /**
     * Whether an idle connection is still usable: a non-blocking read that finds nothing. The
     * server closes a connection after a bad PUT (which has no reply), so an idle connection may
     * have been closed by the peer; end of stream, a reset, or unexpected bytes all retire it.
     */
    private static boolean stillConnected(SocketChannel ch) {
        try {
            ch.configureBlocking(false);
            int n = ch.read(ByteBuffer.allocate(1));
            ch.configureBlocking(true);
            return n == 0;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private void closeQuietly(SocketChannel ch) {
        all.remove(ch);
        try {
            ch.close();
        } catch (IOException ignored) {
            // nothing to do
        }
    }

    private static void write(SocketChannel ch, byte[] bytes) throws IOException {
        LmProtocol.writeFully(ch, ByteBuffer.wrap(bytes));
    }

    /**
     * A reply header. A code other than 200 or 400 means the peer is not an lm:// server speaking
     * LMCache's current frames (a Redis, an older LMCache, another service): that is a failure
     * saying so, never a miss.
     */
    private byte[] readReply(SocketChannel ch) throws IOException {
        byte[] reply = LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES);
        int code = LmProtocol.replyCode(reply);
        if (code != LmProtocol.SUCCESS && code != LmProtocol.FAIL) {
            throw new IOException("the server at " + url() + " is not an lm:// server speaking LMCache's current protocol"
                    + " (its reply began with 0x" + HexFormat.of().formatHex(reply, 0, 8) + ")");
        }
        return reply;
    }
}
