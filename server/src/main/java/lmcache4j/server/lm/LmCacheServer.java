package lmcache4j.server.lm;

import java.io.EOFException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.server.net.AddressInUseException;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmProtocol.ClientHeader;
import lmcache4j.engine.remote.lm.LmProtocol.ProtocolException;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.remote.lm.PayloadTag;
import lmcache4j.server.lm.ServerConnection.Phase;

/**
 * An {@code lm://} cache server (LMCache's {@code python -m lmcache.v1.server}, spec §4.9) with an
 * LRU bounded by {@code maxBytes}, a maximum frame size, an optional shared-secret token, and the
 * {@link LmServerLimits} that keep one client from exhausting it.
 *
 * <p><b>Memory.</b> What the server serves is an {@link LmChunkStore}. Its own is a
 * {@link PagedChunkStore}: payloads off-heap in one pool of {@value #PAGE_BYTES}-byte pages of
 * {@code maxBytes} in all, taken only as a PUT's bytes arrive, least recently used entries evicted
 * page by page, every entry charged its pages plus {@value #ENTRY_CHARGE_BYTES} bytes, at most
 * {@link LmServerLimits#maxEntries()} entries. {@link #startOver} serves a store someone else owns
 * instead (an engine's tiers, read-only, to its peers) under the same frames, token and limits. A GET
 * sends a leased chunk's off-heap buffers with one gathering write; the lease keeps the memory
 * alive until the send is done, whatever is evicted meanwhile.
 *
 * <p><b>Connections.</b> One virtual thread per connection, blocking NIO. A reaper thread closes
 * connections that stall mid-frame or mid-reply, idle too long, or have not authenticated in time.
 * At the connection limit the longest-idle connection makes room, or the newcomer is closed at
 * once. The accept loop survives every error (file descriptors exhausted included) with back-off
 * and rate-limited logging. A malformed message (bad header, bad key, oversize frame, unknown
 * command, short read) closes the connection that sent it and is counted; the server keeps running.
 */
public final class LmCacheServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LmCacheServer.class.getName());
    /** Closed connections end their threads at once; a handler stuck past this is named in a warning. */
    private static final Duration JOIN_BOUND = Duration.ofSeconds(10);

    /** The payload pool's page: small enough that a partial page wastes little, large enough to read and write fast. */
    public static final int PAGE_BYTES = PagedChunkStore.PAGE_BYTES;
    /** What an entry is charged beyond its pages: its key, metadata and bookkeeping. */
    public static final int ENTRY_CHARGE_BYTES = PagedChunkStore.ENTRY_CHARGE_BYTES;
    /** The slices a tagged reply is tagged and sent in: small enough to stay in cache between the two. */
    private static final int TAG_SLICE_BYTES = 256 * 1024;
    /** Tokens shorter than this draw a warning: a server's proof lets guesses be tried offline. */
    static final int MIN_SAFE_TOKEN_BYTES = 16;
    /** The slowest a frame may arrive on average (beyond the stall timeout) before its connection is closed. */
    private static final long MIN_FRAME_BYTES_PER_SECOND = 1L << 20;

    /**
     * Counters, a snapshot. {@code bytes} is metadata plus payload bytes stored; {@code chargedBytes}
     * what the entries are charged against the maximum size (pages plus the per-entry charge);
     * {@code poolUsedBytes} the pages in use (stored entries, PUTs arriving, and evicted entries
     * GETs still send).
     */
    public record Stats(long connections, long puts, long gets, long hits, long evictions, long refusedPuts,
                        long protocolErrors, long entries, long bytes, long poolUsedBytes, long chargedBytes,
                        long openConnections, long refusedConnections, long reclaimedConnections,
                        long timedOutConnections, long authFailures, long acceptErrors) {
    }

    private final ServerSocketChannel server;
    private final long maxBytes;
    private final LmChunkStore store;
    private final Optional<byte[]> token;
    private final int maxFrameBytes;
    private final LmServerLimits limits;
    /** The token's handshake; null on a server without a token. */
    private final LmServerHandshake handshake;
    private final Thread acceptor;
    private final Thread reaper;
    private final Set<ServerConnection> open = ConcurrentHashMap.newKeySet();
    /** The acceptor, the reaper and a virtual thread per connection. */
    private final OwnedThreads threads = new OwnedThreads();
    private final ThreadFactory handlers = threads.virtualFactory("lm-server-conn");
    private volatile boolean closed;

    private final AtomicLong connections = new AtomicLong();
    private final AtomicLong puts = new AtomicLong();
    private final AtomicLong gets = new AtomicLong();
    private final AtomicLong hits = new AtomicLong();
    private final AtomicLong refusedPuts = new AtomicLong();
    private final AtomicLong protocolErrors = new AtomicLong();
    private final AtomicLong refusedConnections = new AtomicLong();
    private final AtomicLong reclaimedConnections = new AtomicLong();
    private final AtomicLong timedOutConnections = new AtomicLong();
    private final AtomicLong acceptErrors = new AtomicLong();
    private final RateLimitedLog acceptErrorLog = new RateLimitedLog(LOG, Level.WARNING, 5_000);
    private final RateLimitedLog refusalLog = new RateLimitedLog(LOG, Level.WARNING, 5_000);
    private final RateLimitedLog protocolErrorLog = new RateLimitedLog(LOG, Level.WARNING, 1_000);

    private LmCacheServer(ServerSocketChannel server, long maxBytes, LmChunkStore store, Optional<String> token,
                          int maxFrameBytes, LmServerLimits limits) {
        this.server = server;
        this.maxBytes = maxBytes;
        this.store = store;
        this.token = token.map(t -> t.getBytes(StandardCharsets.UTF_8));
        this.maxFrameBytes = maxFrameBytes;
        this.limits = limits;
        this.handshake = this.token.map(t -> new LmServerHandshake(t, new AuthThrottle(limits.authFailureDelay(),
                limits.authFailuresPerSecond()), new RateLimitedLog(LOG, Level.WARNING, 5_000))).orElse(null);
        this.acceptor = threads.platform("lm-server-accept-" + port(), this::acceptLoop);
        this.reaper = threads.platform("lm-server-reaper-" + port(), this::reapLoop);
    }

    /** As {@link #start(InetAddress, int, long, Optional, int, LmServerLimits)} with {@link LmServerLimits#defaults()}. */
    public static LmCacheServer start(InetAddress host, int port, long maxBytes, Optional<String> token, int maxFrameBytes)
            throws IOException {
        return start(host, port, maxBytes, token, maxFrameBytes, LmServerLimits.defaults());
    }

    /**
     * Starts a server.
     *
     * @param host          the address to bind (use {@link InetAddress#getLoopbackAddress()} unless
     *                      the server must be reachable from other machines)
     * @param port          the port, 0 for an ephemeral one
     * @param maxBytes      the size of the payload pool (rounded up to whole {@value #PAGE_BYTES}-byte
     *                      pages), against which every entry is charged its pages plus
     *                      {@value #ENTRY_CHARGE_BYTES} bytes; least recently used entries are evicted
     *                      to make room
     * @param token         a shared secret every connection proves first (the {@code LmSession} handshake), or empty
     * @param maxFrameBytes the largest payload one message may carry; larger closes the connection
     * @param limits        connection, entry and time limits
     * @throws IOException when the address cannot be bound or the payload pool cannot be reserved
     */
    public static LmCacheServer start(InetAddress host, int port, long maxBytes, Optional<String> token, int maxFrameBytes,
                                      LmServerLimits limits) throws IOException {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(limits, "limits");
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("the maximum size must be > 0 bytes, was " + maxBytes);
        }
        checkFrameAndToken(token, maxFrameBytes);
        PagedChunkStore pool = PagedChunkStore.reserve(maxBytes, limits.maxEntries());
        try {
            return serve(host, port, pool, maxBytes, token, maxFrameBytes, limits);
        } catch (IOException | RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /**
     * Starts a server over a store it does not own (it is not closed with the server): every frame,
     * limit and the token are enforced as for the cache server's own pool, and the store decides
     * what GET, EXIST, PUT and REMOVE find and keep (a read-only store refuses every PUT).
     *
     * @param store         what the server serves, closed by its owner after the server
     * @param maxFrameBytes the largest payload one message may carry; larger closes the connection
     * @throws IOException when the address cannot be bound
     */
    public static LmCacheServer startOver(InetAddress host, int port, LmChunkStore store, Optional<String> token,
                                          int maxFrameBytes, LmServerLimits limits) throws IOException {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(limits, "limits");
        checkFrameAndToken(token, maxFrameBytes);
        LmChunkStore borrowed = new BorrowedStore(store);
        return serve(host, port, borrowed, 0, token, maxFrameBytes, limits);
    }

    private static void checkFrameAndToken(Optional<String> token, int maxFrameBytes) {
        if (maxFrameBytes <= 0) {
            throw new IllegalArgumentException("the maximum frame must be > 0 bytes, was " + maxFrameBytes);
        }
        if (token.isPresent() && (token.get().isEmpty()
                || token.get().getBytes(StandardCharsets.UTF_8).length > LmProtocol.MAX_TOKEN_BYTES)) {
            throw new IllegalArgumentException("token must be 1.." + LmProtocol.MAX_TOKEN_BYTES + " bytes");
        }
        if (token.isPresent() && token.get().getBytes(StandardCharsets.UTF_8).length < MIN_SAFE_TOKEN_BYTES) {
            // One handshake shows anyone the server's proof, against which guesses can be tried offline.
            LOG.log(Level.WARNING, "lm:// server: a token of fewer than " + MIN_SAFE_TOKEN_BYTES + " bytes can be"
                    + " guessed offline from one handshake; use a random one (openssl rand -hex 16)");
        }
    }

    private static LmCacheServer serve(InetAddress host, int port, LmChunkStore store, long maxBytes, Optional<String> token,
                                       int maxFrameBytes, LmServerLimits limits) throws IOException {
        ServerSocketChannel ch = ServerSocketChannel.open();
        try {
            ch.bind(new InetSocketAddress(host, port));
        } catch (IOException e) {
            ch.close();
            throw AddressInUseException.of(e, "lm", "the lm:// server", host.getHostAddress(), port);
        }
        LmCacheServer s = new LmCacheServer(ch, maxBytes, store, token, maxFrameBytes, limits);
        s.acceptor.start();
        s.reaper.start();
        return s;
    }

    /** A store someone else owns: the server's close leaves it open. */
    private record BorrowedStore(LmChunkStore owner) implements LmChunkStore {
        @Override
        public boolean exists(String key) {
            return owner.exists(key);
        }

        @Override
        public Optional<Lease> lease(String key) {
            return owner.lease(key);
        }

        @Override
        public boolean put(String key, byte[] metadata, int length, PayloadSource source) throws IOException {
            return owner.put(key, metadata, length, source);
        }

        @Override
        public boolean remove(String key) {
            return owner.remove(key);
        }

        @Override
        public Occupancy occupancy() {
            return owner.occupancy();
        }

        @Override
        public void close() {
        }
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

    /** The limits this server runs with. */
    public LmServerLimits limits() {
        return limits;
    }

    /** Counters and the store's occupancy, a snapshot. */
    public Stats stats() {
        LmChunkStore.Occupancy o = store.occupancy();
        return new Stats(connections.get(), puts.get(), gets.get(), hits.get(), o.evictions(), refusedPuts.get(),
                protocolErrors.get(), o.entries(), o.bytes(), o.poolUsedBytes(), o.chargedBytes(), open.size(),
                refusedConnections.get(), reclaimedConnections.get(), timedOutConnections.get(),
                handshake == null ? 0 : handshake.failures(),
                acceptErrors.get());
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
        reaper.interrupt();
        for (ServerConnection c : open) {
            c.close();
        }
        threads.join(JOIN_BOUND);
        Stats s = stats();
        try {
            store.close();
        } catch (RuntimeException e) { // a handler that did not stop in time still holds pages
            LOG.log(Level.WARNING, "lm:// server: payload pool not released at close: {0}", e.getMessage());
        }
        LOG.log(Level.DEBUG, "lm:// server closed: {0}", s);
    }

    // ---- connections ------------------------------------------------------------------------------

    private void acceptLoop() {
        long backoffMillis = 0;
        while (!closed) {
            SocketChannel c = null;
            try {
                c = server.accept();
                backoffMillis = 0;
                admit(c);
            } catch (ClosedChannelException e) {
                return;
            } catch (Throwable e) { // EMFILE, a thread that cannot start, anything: the loop must live on
                if (closed) {
                    return;
                }
                if (c != null) {
                    closeQuietly(c);
                }
                acceptErrors.incrementAndGet();
                backoffMillis = Math.min(1_000, Math.max(10, backoffMillis * 2));
                acceptErrorLog.log("lm:// server: accepting a connection failed: " + e
                        + "; retrying in " + backoffMillis + " ms (accept errors so far: " + acceptErrors.get() + ")");
                backOff(backoffMillis);
            }
        }
    }

    private void backOff(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ie) {
            // close() interrupts nothing here; the loop checks closed
        }
    }

    private void admit(SocketChannel c) throws IOException {
        if (closed) {
            closeQuietly(c);
            return;
        }
        if (open.size() >= limits.maxConnections() && !reclaimIdleConnection()) {
            closeQuietly(c);
            long n = refusedConnections.incrementAndGet();
            refusalLog.log("lm:// server: at its limit of " + limits.maxConnections()
                    + " connections with none idle; closed a new one (refused so far: " + n + ")");
            return;
        }
        try {
            c.setOption(StandardSocketOptions.TCP_NODELAY, true);
        } catch (IOException e) { // the client reset the connection already: its loss, not an accept error
            closeQuietly(c);
            return;
        }
        ServerConnection conn = new ServerConnection(c, token.isPresent());
        connections.incrementAndGet();
        open.add(conn);
        Thread t = handlers.newThread(() -> {
            try {
                serve(conn);
            } finally {
                open.remove(conn);
                conn.close();
            }
        });
        try {
            t.start();
        } catch (Throwable e) {
            open.remove(conn);
            conn.close();
            throw e;
        }
    }

    /** Closes the longest-idle connection, if one has idled long enough, to make room for a new one. */
    private boolean reclaimIdleConnection() {
        long now = System.nanoTime();
        ServerConnection oldest = null;
        for (ServerConnection c : open) {
            if (c.phase() != Phase.BUSY && now - c.lastProgressNanos() >= limits.reclaimIdleAfter().toNanos()
                    && (oldest == null || c.lastProgressNanos() < oldest.lastProgressNanos())) {
                oldest = c;
            }
        }
        if (oldest == null) {
            return false;
        }
        oldest.closeBecause("closed to make room for a new client at the connection limit");
        open.remove(oldest);
        reclaimedConnections.incrementAndGet();
        return true;
    }

    /** Closes connections that stalled, idled too long or missed their frame deadline. */
    private void reapLoop() {
        long stall = limits.stallTimeout().toNanos();
        long idle = limits.idleTimeout().toNanos();
        long tickMillis = Math.clamp(Math.min(stall, idle) / 4 / 1_000_000, 10, 1_000);
        while (!closed) {
            try {
                Thread.sleep(tickMillis);
            } catch (InterruptedException e) {
                if (closed) {
                    return;
                }
            }
            long now = System.nanoTime();
            for (ServerConnection c : open) {
                long quiet = now - c.lastProgressNanos();
                String why = switch (c.phase()) {
                    case IDLE -> quiet > idle ? "idle for longer than " + limits.idleTimeout() : null;
                    case UNAUTHENTICATED -> quiet > stall ? "no handshake within " + limits.stallTimeout() : null;
                    case BUSY -> quiet > stall ? "stalled mid-frame or mid-reply for longer than " + limits.stallTimeout()
                            : now - c.frameDeadlineNanos() > 0 ? "frame arrived slower than "
                            + MIN_FRAME_BYTES_PER_SECOND + " bytes/s" : null;
                };
                if (why != null) {
                    timedOutConnections.incrementAndGet();
                    LOG.log(Level.DEBUG, "lm:// server: closing {0}: {1}", c, why);
                    c.closeBecause(why);
                }
            }
        }
    }

    private void serve(ServerConnection c) {
        boolean authenticated = token.isEmpty();
        LmSession session = null; // the handshake's, on a server with a token
        try {
            while (!closed) {
                c.enter(authenticated ? Phase.IDLE : Phase.UNAUTHENTICATED, Long.MAX_VALUE);
                ByteBuffer hb = ByteBuffer.allocate(LmProtocol.CLIENT_HEADER_BYTES);
                if (c.read(hb) < 0) {
                    return; // clean close between messages
                }
                c.enter(Phase.BUSY, frameDeadline(0));
                LmProtocol.readFully(c, hb);
                ClientHeader h = LmProtocol.decodeClient(hb.array());
                if (!authenticated) {
                    Optional<LmSession> established = handshake.perform(c, h);
                    if (established.isEmpty()) {
                        return; // a wrong proof: FAIL was sent, the connection closes unserved
                    }
                    session = established.get();
                    authenticated = true;
                    continue;
                }
                switch (h.command()) {
                    case LmProtocol.PUT -> put(c, h, hb.array(), session);
                    case LmProtocol.GET -> get(c, h, hb.array(), session);
                    case LmProtocol.EXIST -> {
                        requireKey(h);
                        reply(c, store.exists(h.key()) ? LmProtocol.SUCCESS : LmProtocol.FAIL);
                    }
                    case LmProtocol.REMOVE -> {
                        requireKey(h);
                        reply(c, store.remove(h.key()) ? LmProtocol.SUCCESS : LmProtocol.FAIL);
                    }
                    // LMCache's server has no LIST case and sends nothing, leaving its client waiting; lmcache4j answers.
                    case LmProtocol.LIST -> reply(c, LmProtocol.FAIL);
                    case LmProtocol.HEALTH -> reply(c, LmProtocol.SUCCESS);
                    case LmProtocol.AUTH_HELLO, LmProtocol.AUTH_PROOF, LmProtocol.AUTH_RETIRED -> {
                        if (token.isPresent()) {
                            throw new ProtocolException("command " + h.command() + " after the handshake");
                        }
                        LmServerHandshake.refuse(c, h);
                    }
                    default -> throw new ProtocolException("unknown command " + h.command());
                }
            }
        } catch (ProtocolException e) {
            long n = protocolErrors.incrementAndGet();
            protocolErrorLog.log("lm:// server: closing connection " + c + ": " + e.getMessage()
                    + " (protocol errors so far: " + n + ")");
        } catch (EOFException e) {
            long n = protocolErrors.incrementAndGet();
            LOG.log(Level.DEBUG, "lm:// server: short read from {0}: {1} (protocol errors so far: {2})",
                    c, e.getMessage(), n);
        } catch (IOException e) {
            if (!closed) {
                LOG.log(Level.DEBUG, "lm:// server: connection {0} ended: {1}", c,
                        c.closedBecause() != null ? c.closedBecause() : e.toString());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private long frameDeadline(long payloadBytes) {
        long allowance = limits.stallTimeout().toNanos() + payloadBytes * 1_000_000_000L / MIN_FRAME_BYTES_PER_SECOND;
        return System.nanoTime() + allowance;
    }

    private static void requireKey(ClientHeader h) throws ProtocolException {
        if (h.key().isEmpty()) {
            throw new ProtocolException("command " + h.command() + " needs a key, the key field is blank");
        }
    }

    // ---- PUT and GET --------------------------------------------------------------------------------

    private void put(ServerConnection c, ClientHeader h, byte[] header, LmSession session) throws IOException {
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
        c.enter(Phase.BUSY, frameDeadline(len));
        TaggedPayload source = new TaggedPayload(c, h.key(), len,
                session == null ? null : session.clientToServer().next().update(header));
        boolean stored = store.put(h.key(), meta, len, source);
        source.requireConsumed();
        puts.incrementAndGet(); // only once the whole payload arrived: a PUT cut short is a protocol error
        if (!stored) {
            long n = refusedPuts.incrementAndGet();
            LOG.log(Level.DEBUG, "lm:// server: refused {0} ({1} bytes the store has no room for or does not take;"
                    + " refused so far: {2})", h.key(), len, n);
        }
    }

    private void get(ServerConnection c, ClientHeader h, byte[] header, LmSession session) throws IOException {
        requireKey(h);
        gets.incrementAndGet();
        Optional<LmChunkStore.Lease> leased = store.lease(h.key());
        if (leased.isEmpty()) {
            reply(c, LmProtocol.FAIL);
            return;
        }
        hits.incrementAndGet();
        try (LmChunkStore.Lease e = leased.get()) {
            c.enter(Phase.BUSY, frameDeadline(e.length()));
            ByteBuffer[] payload = e.payload();
            byte[] reply = LmProtocol.encodeServer(LmProtocol.SUCCESS, e.metadata(), e.replyLocation());
            // A client that never reads its reply stalls these writes; the reaper's stall timeout closes it.
            if (session == null) {
                ByteBuffer[] bufs = new ByteBuffer[payload.length + 1];
                bufs[0] = ByteBuffer.wrap(reply);
                System.arraycopy(payload, 0, bufs, 1, payload.length);
                while (bufs[bufs.length - 1].hasRemaining()) {
                    c.write(bufs);
                }
            } else {
                sendTagged(c, session.serverToClient().next().update(header).update(reply), reply, payload);
            }
        }
    }

    /** Slices of the payload being tagged, each written while it is still in cache, then the tag. */
    private static void sendTagged(ServerConnection c, PayloadTag.Message tag, byte[] reply, ByteBuffer[] payload)
            throws IOException {
        LmProtocol.writeFully(c, ByteBuffer.wrap(reply));
        for (ByteBuffer b : payload) {
            ByteBuffer rest = b.duplicate();
            while (rest.hasRemaining()) {
                ByteBuffer slice = rest.slice(rest.position(), Math.min(TAG_SLICE_BYTES, rest.remaining()));
                rest.position(rest.position() + slice.remaining());
                tag.update(slice.duplicate());
                LmProtocol.writeFully(c, slice);
            }
        }
        LmProtocol.writeFully(c, ByteBuffer.wrap(tag.finish()));
    }

    private static void reply(ServerConnection c, int code) throws IOException {
        LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(code)));
    }

    private static void closeQuietly(SocketChannel c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // nothing to do
        }
    }

    @Override
    public String toString() {
        return "LmCacheServer[" + address() + ", max " + maxBytes + " bytes, " + limits + "]";
    }

    /** The limits as a human-readable line (for the server command's start message). */
    public String describeLimits() {
        return "max " + limits.maxConnections() + " connections, " + limits.maxEntries() + " entries; idle timeout "
                + seconds(limits.idleTimeout()) + ", stall timeout " + seconds(limits.stallTimeout());
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }
}
