package lmcache4j.engine.pd.wire;

import java.io.EOFException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.PdSettings;
import lmcache4j.engine.pd.PdBackend;
import lmcache4j.engine.remote.lm.PayloadTag;
import lmcache4j.engine.security.DeploymentSecret;

/**
 * A decoder's PD ports (LMCache's receiver side channels): the allocation port
 * ({@code pd_peer_alloc_port}), where a sender asks for room and is answered from the engine's
 * {@link PdBackend}, and the transfer port ({@code pd_peer_init_port}), where it writes each chunk
 * into that room. Every connection starts with the {@code lm://} handshake on the deployment's token;
 * every frame carries the session's tag. A chunk whose tag fails is never seen by a lookup (its room
 * is freed, the failure counted, the connection closed); a write to room that has expired is
 * answered REFUSED.
 *
 * <p>One platform thread per connection, at most {@value #MAX_CONNECTIONS} per port (the newest is
 * closed beyond that): a virtual thread's every wait for the next bytes of a chunk went through the
 * JDK's poller thread and a carrier's wake-up, which cost the receiving side a third more CPU per byte
 * than a thread blocked in the kernel's read (docs/performance.md). A wrong proof waits
 * {@value #AUTH_FAILURE_DELAY_MS} ms before its FAIL; a connection idle between frames for
 * {@link #IDLE_TIMEOUT} is closed, and a frame once begun must arrive within {@code pd_timeout_ms}
 * (plus a second per MiB).
 */
public final class PdReceiveServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PdReceiveServer.class.getName());
    static final int MAX_CONNECTIONS = 64;
    public static final long AUTH_FAILURE_DELAY_MS = 200;
    /** How long a sender's connection may sit between frames (it keeps it between requests) before it is closed. */
    public static final Duration IDLE_TIMEOUT = Duration.ofMinutes(10);
    private static final int SMALL_FRAME_BYTES = 1 << 20;

    /** Counters, a snapshot. */
    public record Stats(long connections, long refusedConnections, long authFailures, long protocolErrors,
                        long allocationRequests, long writes, long tagFailures) {
    }

    private final PdBackend tier;
    private final PdRooms rooms;
    private final Optional<byte[]> token;
    private final Duration timeout;
    private final String host;
    private final ServerSocket allocSocket;
    private final ServerSocket transferSocket;
    private final OwnedThreads threads = new OwnedThreads();
    private final ThreadFactory handlers = threads.platformFactory("pd-receive-conn");
    private final Set<Socket> allocOpen = ConcurrentHashMap.newKeySet();
    private final Set<Socket> transferOpen = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private final AtomicLong connections = new AtomicLong();
    private final AtomicLong refusedConnections = new AtomicLong();
    private final AtomicLong authFailures = new AtomicLong();
    private final AtomicLong protocolErrors = new AtomicLong();
    private final AtomicLong allocations = new AtomicLong();
    private final AtomicLong writes = new AtomicLong();
    private final AtomicLong tagFailures = new AtomicLong();

    private PdReceiveServer(PdBackend tier, Optional<byte[]> token, Duration timeout, String host, ServerSocket alloc,
                            ServerSocket transfer) {
        this.tier = tier;
        this.rooms = PdRooms.of(tier);
        this.token = token;
        this.timeout = timeout;
        this.host = host;
        this.allocSocket = alloc;
        this.transferSocket = transfer;
        threads.start("pd-alloc-accept-" + alloc.getLocalPort(), () -> acceptLoop(alloc, allocOpen, this::serveAllocations));
        threads.start("pd-transfer-accept-" + transfer.getLocalPort(), () -> acceptLoop(transfer, transferOpen,
                this::serveWrites));
    }

    /**
     * Serves {@code engine}'s PD tier on {@code pd_peer_host} and worker {@code workerId}'s entries of
     * {@code pd_peer_alloc_port} and {@code pd_peer_init_port}, demanding the deployment's token
     * ({@code p2p_token}, else the one {@code deployment_secret_file} derives).
     *
     * @throws IllegalArgumentException when the engine is not a PD receiver
     * @throws IOException              when a port cannot be bound
     */
    public static PdReceiveServer start(LMCacheEngine engine) throws IOException {
        Objects.requireNonNull(engine, "engine");
        PdSettings pd = engine.config().pd().filter(p -> p.role() == PdSettings.Role.RECEIVER).orElseThrow(() ->
                new IllegalArgumentException("a PD receive server needs an engine with enable_pd and pd_role: receiver"));
        PdBackend tier = engine.storage().tier(PdBackend.NAME).map(PdBackend.class::cast).orElseThrow(() ->
                new IllegalStateException("the engine has no PD tier"));
        int worker = engine.metadata().workerId();
        byte[] token = DeploymentSecret.pdToken(engine.config(), pd).getBytes(StandardCharsets.UTF_8);
        return start(tier, pd.peerHost().orElseThrow(), pd.allocPortOf(worker), pd.initPortOf(worker), Optional.of(token),
                pd.timeout());
    }

    /**
     * Serves {@code tier} on {@code host}, ports {@code allocPort} and {@code initPort} (0: any free one).
     *
     * @param token the deployment's token; empty only for {@code bench pd}'s unkeyed measurement
     */
    public static PdReceiveServer start(PdBackend tier, String host, int allocPort, int initPort, Optional<byte[]> token,
                                        Duration timeout) throws IOException {
        Objects.requireNonNull(tier, "tier");
        if (token.isPresent()) {
            PayloadTag.Algorithm.preferred(); // a bad -Dlmcache4j.payload_tag fails the start, not every handshake
        }
        InetAddress address = InetAddress.getByName(host);
        // Channels' sockets: a chunk is then read straight into the PD buffer (PdConnection).
        ServerSocket alloc = ServerSocketChannel.open().socket();
        ServerSocket transfer = ServerSocketChannel.open().socket();
        try {
            alloc.setReuseAddress(true);
            transfer.setReuseAddress(true);
            alloc.bind(new InetSocketAddress(address, allocPort), 128);
            transfer.bind(new InetSocketAddress(address, initPort), 128);
        } catch (IOException e) {
            alloc.close();
            transfer.close();
            throw new IOException("cannot bind the PD ports " + host + ":" + allocPort + " (pd_peer_alloc_port) and "
                    + initPort + " (pd_peer_init_port): " + e.getMessage(), e);
        }
        return new PdReceiveServer(tier, token, timeout, host, alloc, transfer);
    }

    /** The bound allocation port. */
    public int allocPort() {
        return allocSocket.getLocalPort();
    }

    /** The bound transfer port. */
    public int initPort() {
        return transferSocket.getLocalPort();
    }

    /** The host senders reach these ports at. */
    public String host() {
        return host;
    }

    /** The tier it serves. */
    public PdBackend tier() {
        return tier;
    }

    @FunctionalInterface
    private interface Session {
        void serve(PdConnection c) throws IOException;
    }

    /** Accepts on {@code server} while at most {@link #MAX_CONNECTIONS} of its connections ({@code open}) are open. */
    private void acceptLoop(ServerSocket server, Set<Socket> open, Session session) {
        while (!closed) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.log(Level.WARNING, "PD receive server: accept failed: " + e.getMessage());
                    sleep(50);
                }
                continue;
            }
            if (open.size() >= MAX_CONNECTIONS) { // per port: a flood of one leaves the other's senders served
                refusedConnections.incrementAndGet();
                close(s);
                continue;
            }
            open.add(s);
            connections.incrementAndGet();
            handlers.newThread(() -> handle(s, open, session)).start();
        }
    }

    private void handle(Socket socket, Set<Socket> open, Session session) {
        try { // closed in finally, after the catch has counted: a peer that sees the hang-up sees the count
            PdConnection c;
            if (token.isPresent()) {
                Optional<PdConnection> accepted = PdConnection.accept(socket, token.get(), timeout, SMALL_FRAME_BYTES
                        + (int) Math.min(Integer.MAX_VALUE - SMALL_FRAME_BYTES, maxChunkBytes()));
                if (accepted.isEmpty()) {
                    long n = authFailures.incrementAndGet();
                    LOG.log(Level.WARNING, "PD receive server: a sender at {0} could not prove the deployment's token "
                            + "(wrong tokens so far: {1}); closing", socket.getRemoteSocketAddress(), n);
                    sleep(AUTH_FAILURE_DELAY_MS);
                    return;
                }
                c = accepted.get();
            } else {
                c = PdConnection.unkeyedForBenchmark(socket, timeout, SMALL_FRAME_BYTES + (int) maxChunkBytes());
            }
            c.setIdleTimeout(IDLE_TIMEOUT);
            session.serve(c);
        } catch (PdTagMismatchException e) {
            tagFailures.incrementAndGet();
            LOG.log(Level.WARNING, "PD receive server: " + e.getMessage() + "; closing the connection");
        } catch (PdProtocolException e) {
            protocolErrors.incrementAndGet();
            LOG.log(Level.WARNING, "PD receive server: closing a connection from " + socket.getRemoteSocketAddress() + ": "
                    + e.getMessage());
        } catch (EOFException e) {
            // the sender closed its connection
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                LOG.log(Level.DEBUG, "PD receive server: connection ended: {0}", e.toString());
            }
        } finally {
            close(socket);
            open.remove(socket);
        }
    }

    private long maxChunkBytes() {
        return tier.metadata().chunkBytes(tier.chunkSize()) + Long.BYTES;
    }

    /** The allocation port: AllocRequest in, AllocResponse out, until the sender closes. */
    private void serveAllocations(PdConnection c) throws IOException {
        while (!closed) {
            PdConnection.Frame f = c.receive();
            if (!(f instanceof PdConnection.Message m)) {
                throw new PdProtocolException("the allocation port takes allocation requests, got " + f);
            }
            allocations.incrementAndGet();
            AllocResponse answer = rooms.allocate(PdMessages.decodeAllocRequest(m.body()));
            if (!answer.error().isEmpty()) {
                LOG.log(Level.WARNING, "PD receive server: refused an allocation request from {0}: {1}", c.peer(),
                        answer.error());
            }
            c.sendMessage(PdMessages.encode(answer));
        }
    }

    /** The transfer port: chunk writes into allocated room, each acknowledged, until the sender closes. */
    private void serveWrites(PdConnection c) throws IOException {
        while (!closed) {
            PdConnection.Frame f = c.receive();
            if (!(f instanceof PdConnection.ChunkHeader h)) {
                throw new PdProtocolException("the transfer port takes chunk writes, got " + f);
            }
            Optional<PdRooms.Landing> landing = rooms.beginWrite(h.slot(), h.payloadBytes());
            if (landing.isEmpty()) {
                c.skipChunkPayload();
                c.sendAck(PdConnection.REFUSED);
                continue;
            }
            boolean ok = false;
            try {
                c.readChunkPayload(landing.get().segment());
                ok = true;
            } catch (PdTagMismatchException e) {
                landing.get().discard(true);
                throw e;
            } finally {
                if (!ok) {
                    landing.get().discard(false);
                }
            }
            landing.get().landed();
            writes.incrementAndGet();
            c.sendAck(PdConnection.OK);
        }
    }

    /** The counters now. */
    public Stats stats() {
        return new Stats(connections.get(), refusedConnections.get(), authFailures.get(), protocolErrors.get(),
                allocations.get(), writes.get(), tagFailures.get());
    }

    private static void close(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // best effort
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops accepting, closes every connection (a write in progress is discarded) and waits for their threads. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            allocSocket.close();
        } catch (IOException e) {
            // closing
        }
        try {
            transferSocket.close();
        } catch (IOException e) {
            // closing
        }
        allocOpen.forEach(PdReceiveServer::close);
        transferOpen.forEach(PdReceiveServer::close);
        threads.join(Duration.ofSeconds(10));
    }

    @Override
    public String toString() {
        return "PdReceiveServer[" + host + ", alloc " + allocPort() + ", transfer " + initPort() + "]";
    }
}
