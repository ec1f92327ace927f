package lmcache4j.server.lm;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.SocketChannel;

/**
 * One client connection of an {@link LmCacheServer}: the socket, what the connection is doing, and
 * when a byte last moved, so that the server's reaper can close connections that stall, idle too
 * long, or have to make room for a new client. Reads and writes through this channel record their
 * progress; the serving thread is the only one that reads or writes.
 */
final class ServerConnection implements ByteChannel {
    /** What the connection is waiting for. */
    enum Phase {
        /** Connected to a server with a token, not yet authenticated: the stall timeout applies. */
        UNAUTHENTICATED,
        /** Between requests: the idle timeout applies, and the server may reclaim it at its connection limit. */
        IDLE,
        /** Part of a request received, or a reply being sent: the stall timeout and the frame deadline apply. */
        BUSY
    }

    private final SocketChannel channel;
    private final SocketAddress remote;
    private volatile Phase phase;
    private volatile long lastProgressNanos = System.nanoTime();
    /** When the current frame must be complete (BUSY only); Long.MAX_VALUE for none. */
    private volatile long frameDeadlineNanos = Long.MAX_VALUE;
    private volatile String closedBecause;

    ServerConnection(SocketChannel channel, boolean needsAuth) {
        this.channel = channel;
        this.remote = remoteOf(channel);
        this.phase = needsAuth ? Phase.UNAUTHENTICATED : Phase.IDLE;
    }

    Phase phase() {
        return phase;
    }

    /** Enters {@code p} now; {@code deadlineNanos} bounds a BUSY frame (Long.MAX_VALUE for none). */
    void enter(Phase p, long deadlineNanos) {
        lastProgressNanos = System.nanoTime();
        frameDeadlineNanos = deadlineNanos;
        phase = p;
    }

    long lastProgressNanos() {
        return lastProgressNanos;
    }

    long frameDeadlineNanos() {
        return frameDeadlineNanos;
    }

    SocketAddress remote() {
        return remote;
    }

    /** Why the server closed this connection, or null when it was not closed by the server's rules. */
    String closedBecause() {
        return closedBecause;
    }

    /** Closes the socket on behalf of a rule (the serving thread's blocked read or write then fails). */
    void closeBecause(String reason) {
        if (closedBecause == null) {
            closedBecause = reason;
        }
        close();
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        return (int) progressed(channel.read(dst));
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        return (int) progressed(channel.write(src));
    }

    /** A gathering write of {@code srcs}, recording progress. */
    long write(ByteBuffer[] srcs) throws IOException {
        return progressed(channel.write(srcs));
    }

    /** Notes that bytes moved (the reaper's stall and idle clocks restart); returns {@code n}. */
    private long progressed(long n) {
        if (n > 0) {
            lastProgressNanos = System.nanoTime();
        }
        return n;
    }

    @Override
    public boolean isOpen() {
        return channel.isOpen();
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public String toString() {
        return String.valueOf(remote);
    }

    private static SocketAddress remoteOf(SocketChannel c) {
        try {
            return c.getRemoteAddress();
        } catch (IOException e) {
            return null;
        }
    }
}
