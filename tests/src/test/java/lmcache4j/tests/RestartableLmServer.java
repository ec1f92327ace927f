package lmcache4j.tests;

import java.io.IOException;
import java.net.InetAddress;
import java.util.Optional;

import lmcache4j.server.lm.LmCacheServer;

/** An in-process {@code lm://} server on loopback that can be killed and started again on the same port (empty, as a restarted server is). */
final class RestartableLmServer implements AutoCloseable {
    private final long maxBytes;
    private final int maxFrameBytes;
    private final int port;
    private LmCacheServer server;

    RestartableLmServer(long maxBytes, int maxFrameBytes) throws IOException {
        this.maxBytes = maxBytes;
        this.maxFrameBytes = maxFrameBytes;
        this.server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, maxBytes, Optional.empty(), maxFrameBytes);
        this.port = server.port();
    }

    String url(int timeoutMillis) {
        return "lm://127.0.0.1:" + port + "?timeout_ms=" + timeoutMillis;
    }

    boolean isUp() {
        return server != null;
    }

    /** The running server's counters, if it runs. */
    Optional<LmCacheServer.Stats> stats() {
        return Optional.ofNullable(server).map(LmCacheServer::stats);
    }

    long maxBytes() {
        return maxBytes;
    }

    /** Stops the server and drops every connection, as a crash would. */
    void kill() {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    /** Starts a new, empty server on the same port; retries while the port is not free yet. */
    void restart() throws IOException, InterruptedException {
        if (server != null) {
            return;
        }
        IOException last = null;
        for (int attempt = 0; attempt < 100; attempt++) {
            try {
                server = LmCacheServer.start(InetAddress.getLoopbackAddress(), port, maxBytes, Optional.empty(), maxFrameBytes);
                return;
            } catch (IOException e) {
                last = e;
                Thread.sleep(50);
            }
        }
        throw last;
    }

    @Override
    public void close() {
        kill();
    }
}
