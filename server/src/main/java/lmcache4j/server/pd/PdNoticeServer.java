package lmcache4j.server.pd;

import java.io.EOFException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.pd.wire.PdConnection;
import lmcache4j.engine.pd.wire.PdMessages;
import lmcache4j.engine.pd.wire.PdProtocolException;
import lmcache4j.engine.pd.wire.PdReceiveServer;
import lmcache4j.engine.pd.wire.PdTagMismatchException;
import lmcache4j.engine.pd.wire.ProxyNotif;

/**
 * The proxy's notice port ({@code pd_proxy_port}, where LMCache's proxy binds a ZeroMQ PULL socket):
 * prefillers connect with the deployment's token, then send tagged {@link ProxyNotif} frames, each
 * acknowledged. A connection without the token is refused at the handshake (counted, after a
 * delay); a frame with a wrong tag closes its connection (counted); a notice for a request the
 * proxy is not waiting for is answered REFUSED and counted. At most {@value #MAX_CONNECTIONS}
 * connections at once.
 */
final class PdNoticeServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PdNoticeServer.class.getName());
    static final int MAX_CONNECTIONS = 256;
    private static final int MAX_FRAME_BYTES = 4_096;

    private final ServerSocket socket;
    private final byte[] token;
    private final Duration timeout;
    private final PdNoticeBoard board;
    private final OwnedThreads threads = new OwnedThreads();
    private final ThreadFactory handlers = threads.virtualFactory("pd-notice-conn");
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final AtomicLong authFailures = new AtomicLong();
    private final AtomicLong tagFailures = new AtomicLong();
    private final AtomicLong protocolErrors = new AtomicLong();
    private volatile boolean closed;

    PdNoticeServer(String host, int port, byte[] token, Duration timeout, PdNoticeBoard board) throws IOException {
        this.token = token.clone();
        this.timeout = timeout;
        this.board = board;
        this.socket = new ServerSocket();
        try {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(InetAddress.getByName(host), port), 128);
        } catch (IOException e) {
            socket.close();
            throw new IOException("cannot bind the proxy's notice port " + host + ":" + port + ": " + e.getMessage(), e);
        }
        threads.start("pd-notice-accept-" + socket.getLocalPort(), this::acceptLoop);
    }

    int port() {
        return socket.getLocalPort();
    }

    private void acceptLoop() {
        while (!closed) {
            Socket s;
            try {
                s = socket.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.log(Level.WARNING, "PD proxy: accept on the notice port failed: " + e.getMessage());
                    pause(50);
                }
                continue;
            }
            if (open.size() >= MAX_CONNECTIONS) {
                close(s);
                continue;
            }
            open.add(s);
            handlers.newThread(() -> serve(s)).start();
        }
    }

    private void serve(Socket s) {
        try { // closed in finally, after the catch has counted: a peer that sees the hang-up sees the count
            Optional<PdConnection> accepted = PdConnection.accept(s, token, timeout, MAX_FRAME_BYTES);
            if (accepted.isEmpty()) {
                long n = authFailures.incrementAndGet();
                LOG.log(Level.WARNING, "PD proxy: a notice sender at {0} could not prove the deployment's token "
                        + "(so far: {1}); refused", s.getRemoteSocketAddress(), n);
                pause(PdReceiveServer.AUTH_FAILURE_DELAY_MS);
                return;
            }
            PdConnection c = accepted.get();
            c.setIdleTimeout(PdReceiveServer.IDLE_TIMEOUT); // a prefiller keeps its connection open between requests
            while (!closed) {
                PdConnection.Frame f = c.receive();
                if (!(f instanceof PdConnection.Message m)) {
                    throw new PdProtocolException("the notice port takes ProxyNotif messages, got " + f);
                }
                ProxyNotif notice = PdMessages.decodeProxyNotif(m.body());
                PdNoticeBoard.Posted posted = board.post(notice.reqId());
                if (posted == PdNoticeBoard.Posted.UNKNOWN) {
                    LOG.log(Level.WARNING, "PD proxy: a ready notice for {0}, which no request waits for", notice.reqId());
                }
                c.sendAck(posted == PdNoticeBoard.Posted.COUNTED ? PdConnection.OK : PdConnection.REFUSED);
            }
        } catch (PdTagMismatchException e) {
            tagFailures.incrementAndGet();
            LOG.log(Level.WARNING, "PD proxy: " + e.getMessage());
        } catch (PdProtocolException e) {
            protocolErrors.incrementAndGet();
            LOG.log(Level.WARNING, "PD proxy: closing a notice connection: " + e.getMessage());
        } catch (EOFException e) {
            // the prefiller closed its connection
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                LOG.log(Level.DEBUG, "PD proxy: notice connection ended: {0}", e.toString());
            }
        } finally {
            close(s);
            open.remove(s);
        }
    }

    long authFailures() {
        return authFailures.get();
    }

    long tagFailures() {
        return tagFailures.get();
    }

    long protocolErrors() {
        return protocolErrors.get();
    }

    private static void close(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // best effort
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            socket.close();
        } catch (IOException e) {
            // closing
        }
        open.forEach(PdNoticeServer::close);
        threads.join(Duration.ofSeconds(10));
    }
}
