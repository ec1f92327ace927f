package lmcache4j.engine.remote.lm;

import java.io.EOFException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.host.HostArenaOptions;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmProtocol.ClientHeader;
import lmcache4j.engine.remote.lm.LmProtocol.ProtocolException;

/**
 * An {@code lm://} cache server (LMCache's {@code python -m lmcache.v1.server}, spec §4.9) with an
 * LRU bounded by {@code maxBytes}, a maximum frame size and an optional shared-secret token.
 *
 * <p>Payloads live off-heap in one {@link TensorMemoryAllocator} pool of {@code maxBytes}
 * (anonymous memory, faulted in as it is used): a PUT reads the socket straight into its object
 * and a GET writes straight from it, with no heap copy and no garbage for the collector (32 MiB
 * heap arrays per chunk made the server's speed swing with GC). When the pool has no room the
 * least recently used entries are evicted until the payload fits. A GET holds a reference on the
 * object it sends, so an entry evicted or replaced meanwhile goes back to the pool only when the
 * send is done.
 *
 * <p>One virtual thread per connection, blocking NIO. A malformed message (bad header, bad key,
 * oversize frame, unknown command, short read) closes the connection that sent it and is counted;
 * the server keeps running.
 */
public final class LmCacheServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LmCacheServer.class.getName());

    /**
     * Counters, a snapshot. {@code bytes} is metadata plus payload bytes stored; {@code poolUsedBytes}
     * the payload pool in use (payloads rounded up to 4 KiB, plus objects GETs still send).
     */
    public record Stats(long connections, long puts, long gets, long hits, long evictions, long refusedPuts,
                        long protocolErrors, long entries, long bytes, long poolUsedBytes) {
    }

    /** One stored chunk; {@code payload} is empty for a zero-length PUT. The map holds one reference. */
    private record Entry(byte[] metadata, Optional<MemoryObj> payload, int length) {
        long size() {
            return (long) metadata.length + length;
        }

        void release() {
            payload.ifPresent(MemoryObj::release);
        }
    }

    private static final long PAYLOAD_ALIGNMENT = 4096;

    private final ServerSocketChannel server;
    private final long maxBytes;
    private final TensorMemoryAllocator pool;
    /** The pool's bytes (maxBytes rounded up to pages): a larger payload is refused without evicting anything. */
    private final long poolCapacity;
    private final Optional<byte[]> token;
    private final int maxFrameBytes;
    private final Thread acceptor;
    private final Set<SocketChannel> open = ConcurrentHashMap.newKeySet();
    private final Set<Thread> handlers = ConcurrentHashMap.newKeySet();
    private final LinkedHashMap<String, Entry> lru = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes; // guarded by lru
    private volatile boolean closed;

    private final AtomicLong connections = new AtomicLong();
    private final AtomicLong puts = new AtomicLong();
    private final AtomicLong gets = new AtomicLong();
    private final AtomicLong hits = new AtomicLong();
    private final AtomicLong evictions = new AtomicLong();
    private final AtomicLong refusedPuts = new AtomicLong();
    private final AtomicLong protocolErrors = new AtomicLong();

    private LmCacheServer(ServerSocketChannel server, long maxBytes, TensorMemoryAllocator pool, Optional<String> token,
                          int maxFrameBytes) {
        this.server = server;
        this.maxBytes = maxBytes;
        this.pool = pool;
        this.poolCapacity = pool.stats().capacityBytes();
        this.token = token.map(t -> t.getBytes(StandardCharsets.UTF_8));
        this.maxFrameBytes = maxFrameBytes;
        this.acceptor = Thread.ofPlatform().name("lm-server-accept-" + port()).daemon(true).unstarted(this::acceptLoop);
    }

    /**
     * Starts a server.
     *
     * @param host          the address to bind (use {@link InetAddress#getLoopbackAddress()} unless
     *                      the server must be reachable from other machines)
     * @param port          the port, 0 for an ephemeral one
     * @param maxBytes      the size of the payload pool (rounded up to whole pages; each payload takes a
     *                      multiple of 4 KiB of it); least recently used entries are evicted to make room
     * @param token         a shared secret every connection must present first (AUTH), or empty
     * @param maxFrameBytes the largest payload one message may carry; larger closes the connection
     * @throws IOException when the address cannot be bound or the payload pool cannot be reserved
     */
    public static LmCacheServer start(InetAddress host, int port, long maxBytes, Optional<String> token, int maxFrameBytes)
            throws IOException {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(token, "token");
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes must be > 0, was " + maxBytes);
        }
        if (maxFrameBytes <= 0) {
            throw new IllegalArgumentException("maxFrameBytes must be > 0, was " + maxFrameBytes);
        }
        if (token.isPresent() && (token.get().isEmpty()
                || token.get().getBytes(StandardCharsets.UTF_8).length > LmProtocol.MAX_TOKEN_BYTES)) {
            throw new IllegalArgumentException("token must be 1.." + LmProtocol.MAX_TOKEN_BYTES + " bytes");
        }
        ServerSocketChannel ch = ServerSocketChannel.open();
        try {
            ch.bind(new InetSocketAddress(host, port));
        } catch (IOException e) {
            ch.close();
            throw new IOException("cannot bind lm:// server to " + host.getHostAddress() + ":" + port + ": " + e.getMessage(), e);
        }
        TensorMemoryAllocator pool;
        try {
            // Not CUDA-pinned: the server only moves bytes between sockets and memory.
            pool = TensorMemoryAllocator.create("lm-server", HostArena.allocate(maxBytes,
                    HostArenaOptions.DEFAULT.withCudaPinned(false)), PAYLOAD_ALIGNMENT);
        } catch (RuntimeException e) {
            ch.close();
            // Typically ENOMEM: the kernel refuses to reserve more than the machine can back.
            throw new IOException("cannot reserve the lm:// server's payload pool of " + maxBytes + " bytes ("
                    + String.format(java.util.Locale.ROOT, "%.1f GiB", maxBytes / (double) (1L << 30))
                    + "; lower the maximum size): " + e.getMessage(), e);
        }
        LmCacheServer s = new LmCacheServer(ch, maxBytes, pool, token, maxFrameBytes);
        s.acceptor.start();
        return s;
    }

    /** The bound port. */
    public int port() {
        return address().getPort();
    }

    /** The bound address. */
    public InetSocketAddress address() {
        try {
            return (InetSocketAddress) server.getLocalAddress();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    public Stats stats() {
        synchronized (lru) {
            return new Stats(connections.get(), puts.get(), gets.get(), hits.get(), evictions.get(), refusedPuts.get(),
                    protocolErrors.get(), lru.size(), bytes, pool.stats().usedBytes());
        }
    }

    public boolean isRunning() {
        return !closed && acceptor.isAlive();
    }

    /** Stops accepting, closes every connection and joins the threads. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (SocketChannel c : open) {
            closeQuietly(c);
        }
        try {
            acceptor.join(5_000);
            for (Thread t : handlers) {
                t.join(5_000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Stats s = stats();
        synchronized (lru) {
            lru.values().forEach(Entry::release);
            lru.clear();
            bytes = 0;
        }
        try {
            pool.close();
        } catch (RuntimeException e) { // a handler that did not stop in time still holds an object
            LOG.log(Level.WARNING, "lm:// server: payload pool not released at close: {0}", e.getMessage());
        }
        LOG.log(Level.DEBUG, "lm:// server closed: {0}", s);
    }

    private void acceptLoop() {
        while (!closed) {
            SocketChannel c;
            try {
                c = server.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                LOG.log(Level.WARNING, "lm:// server accept failed: {0}", e.toString());
                continue;
            }
            connections.incrementAndGet();
            open.add(c);
            if (closed) {
                closeQuietly(c);
                return;
            }
            Thread t = Thread.ofVirtual().name("lm-server-conn").unstarted(() -> {
                try {
                    serve(c);
                } finally {
                    open.remove(c);
                    closeQuietly(c);
                    handlers.remove(Thread.currentThread());
                }
            });
            handlers.add(t);
            t.start();
        }
    }

    private void serve(SocketChannel c) {
        boolean authenticated = token.isEmpty();
        try {
            while (!closed) {
                byte[] head = new byte[LmProtocol.CLIENT_HEADER_BYTES];
                ByteBuffer hb = ByteBuffer.wrap(head);
                if (c.read(hb) < 0) {
                    return; // clean close between messages
                }
                LmProtocol.readFully(c, hb);
                ClientHeader h = LmProtocol.decodeClient(head);
                if (!authenticated) {
                    if (h.command() != LmProtocol.AUTH) {
                        throw new ProtocolException("command " + h.command() + " before AUTH on a server with a token");
                    }
                    if (!auth(c, h)) {
                        return;
                    }
                    authenticated = true;
                    continue;
                }
                switch (h.command()) {
                    case LmProtocol.PUT -> put(c, h);
                    case LmProtocol.GET -> get(c, h);
                    case LmProtocol.EXIST -> {
                        requireKey(h);
                        boolean present;
                        synchronized (lru) {
                            present = lru.containsKey(h.key());
                        }
                        reply(c, present ? LmProtocol.SUCCESS : LmProtocol.FAIL);
                    }
                    case LmProtocol.REMOVE -> {
                        requireKey(h);
                        Entry e;
                        synchronized (lru) {
                            e = lru.remove(h.key());
                            if (e != null) {
                                bytes -= e.size();
                                e.release();
                            }
                        }
                        reply(c, e != null ? LmProtocol.SUCCESS : LmProtocol.FAIL);
                    }
                    case LmProtocol.LIST -> reply(c, LmProtocol.FAIL); // not implemented, as LMCache
                    case LmProtocol.HEALTH -> reply(c, LmProtocol.SUCCESS);
                    case LmProtocol.AUTH -> {
                        if (!auth(c, h)) {
                            return;
                        }
                    }
                    default -> throw new ProtocolException("unknown command " + h.command());
                }
            }
        } catch (ProtocolException e) {
            long n = protocolErrors.incrementAndGet();
            LOG.log(Level.WARNING, "lm:// server: closing connection {0}: {1} (protocol errors so far: {2})",
                    remote(c), e.getMessage(), n);
        } catch (EOFException e) {
            long n = protocolErrors.incrementAndGet();
            LOG.log(Level.DEBUG, "lm:// server: short read from {0}: {1} (protocol errors so far: {2})",
                    remote(c), e.getMessage(), n);
        } catch (IOException e) {
            if (!closed) {
                LOG.log(Level.DEBUG, "lm:// server: connection {0} failed: {1}", remote(c), e.toString());
            }
        }
    }

    private boolean auth(SocketChannel c, ClientHeader h) throws IOException {
        int len = h.length();
        if (len < 0 || len > LmProtocol.MAX_TOKEN_BYTES) {
            throw new ProtocolException("AUTH token length " + len + " outside 0.." + LmProtocol.MAX_TOKEN_BYTES);
        }
        byte[] presented = LmProtocol.readFully(c, len);
        boolean ok = token.isEmpty() || MessageDigest.isEqual(token.get(), presented);
        reply(c, ok ? LmProtocol.SUCCESS : LmProtocol.FAIL);
        if (!ok) {
            LOG.log(Level.WARNING, "lm:// server: wrong token from {0}; closing", remote(c));
        }
        return ok;
    }

    private static void requireKey(ClientHeader h) throws ProtocolException {
        if (h.key().isEmpty()) {
            throw new ProtocolException("command " + h.command() + " needs a key, the key field is blank");
        }
    }

    private void put(SocketChannel c, ClientHeader h) throws IOException {
        requireKey(h);
        int len = h.length();
        if (len < 0 || len > maxFrameBytes) {
            throw new ProtocolException("PUT payload of " + len + " bytes outside 0.." + maxFrameBytes + " (max frame)");
        }
        byte[] meta = h.metadataBytes();
        try {
            RemoteMetadata.decode(meta);
        } catch (IllegalArgumentException e) {
            throw new ProtocolException(e.getMessage());
        }
        Optional<MemoryObj> payload = len == 0 ? Optional.empty() : allocateEvicting(len);
        if (len > 0 && payload.isEmpty()) {
            LmProtocol.skipFully(c, len); // keep the stream in step: the next message follows the payload
            puts.incrementAndGet();
            long n = refusedPuts.incrementAndGet();
            LOG.log(Level.DEBUG, "lm:// server: refused {0} ({1} bytes do not fit the {2}-byte pool; refused so far: {3})",
                    h.key(), len, maxBytes, n);
            return;
        }
        Entry entry = new Entry(meta, payload, len);
        try {
            if (payload.isPresent()) {
                LmProtocol.readFully(c, payload.get().segment().asSlice(0, len).asByteBuffer());
            }
        } catch (IOException | RuntimeException e) {
            entry.release();
            throw e;
        }
        puts.incrementAndGet(); // only once the whole payload arrived: a PUT cut short is a protocol error
        synchronized (lru) {
            Entry old = lru.put(h.key(), entry);
            if (old != null) {
                bytes -= old.size();
                old.release();
            }
            bytes += entry.size();
        }
    }

    /** An object of {@code len} bytes, evicting least recently used entries until it fits; empty when it cannot. */
    private Optional<MemoryObj> allocateEvicting(int len) {
        TensorShape shape = TensorShape.of(len);
        if (len > poolCapacity) {
            return Optional.empty();
        }
        synchronized (lru) {
            while (true) {
                Optional<MemoryObj> obj = pool.allocate(shape, DType.UINT8, MemoryFormat.BINARY);
                if (obj.isPresent()) {
                    return obj;
                }
                Iterator<Map.Entry<String, Entry>> it = lru.entrySet().iterator();
                if (!it.hasNext()) {
                    return Optional.empty(); // what is left is held by GETs in progress
                }
                Entry victim = it.next().getValue();
                it.remove();
                bytes -= victim.size();
                victim.release();
                evictions.incrementAndGet();
            }
        }
    }

    private void get(SocketChannel c, ClientHeader h) throws IOException {
        requireKey(h);
        gets.incrementAndGet();
        Entry e;
        synchronized (lru) {
            e = lru.get(h.key());
            if (e != null) {
                e.payload().ifPresent(MemoryObj::retain); // the send's own reference: eviction cannot free it meanwhile
            }
        }
        if (e == null) {
            reply(c, LmProtocol.FAIL);
            return;
        }
        hits.incrementAndGet();
        try {
            ByteBuffer body = e.payload().map(p -> p.segment().asSlice(0, e.length()).asByteBuffer())
                    .orElse(ByteBuffer.allocate(0));
            LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(LmProtocol.SUCCESS, e.metadata())), body);
        } finally {
            e.release();
        }
    }

    private static void reply(SocketChannel c, int code) throws IOException {
        LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(code)));
    }

    private static String remote(SocketChannel c) {
        try {
            return String.valueOf(c.getRemoteAddress());
        } catch (IOException e) {
            return "?";
        }
    }

    private static void closeQuietly(SocketChannel c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // nothing to do
        }
    }
}
