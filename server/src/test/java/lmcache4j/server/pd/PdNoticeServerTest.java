package lmcache4j.server.pd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;

import lmcache4j.engine.pd.wire.PdConnection;
import lmcache4j.engine.pd.wire.PdMessages;
import lmcache4j.engine.pd.wire.ProxyNotif;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.pd.wire.PdReceiveServer;

/**
 * The proxy's notice port as an attacker meets it: a wrong proof is answered FAIL, counted and hung
 * up on after the guessing delay; a frame with a wrong tag, a frame that is no notice, a frame over
 * the limit each close their connection, counted, with nothing posted; connections over the cap are
 * hung up on at once; and {@code close} does not wait for the connections it holds.
 */
class PdNoticeServerTest {
    static final byte[] TOKEN = "pd-notice-test-token-0123456789ab".getBytes(StandardCharsets.UTF_8);
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Duration BOUND = Duration.ofSeconds(20);

    private static PdNoticeServer start(PdNoticeBoard board) throws IOException {
        return new PdNoticeServer("127.0.0.1", 0, TOKEN, TIMEOUT, board);
    }

    /** A plain connection to the notice port: no handshake yet. */
    private static SocketChannel raw(PdNoticeServer server) throws IOException {
        return SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.port()));
    }

    private static PdConnection connect(PdNoticeServer server) throws IOException {
        return PdConnection.connect("127.0.0.1", server.port(), TOKEN, Duration.ofSeconds(5), 4_096);
    }

    private static byte notice(PdConnection c, String reqId) throws IOException {
        c.sendMessage(PdMessages.encode(new ProxyNotif(reqId)));
        return ((PdConnection.Ack) c.receive()).status();
    }

    @Test
    void aPrefillersNoticesAreAcknowledgedOnceEachRankAndRefusedForAnythingElse() throws Exception {
        PdNoticeBoard board = new PdNoticeBoard(4);
        try (PdNoticeServer server = start(board); PdConnection c = connect(server)) {
            assertTrue(board.expect("req-1", 2));
            assertEquals(PdConnection.OK, notice(c, "req-1"));
            assertEquals(PdConnection.OK, notice(c, "req-1"), "the second rank's notice");
            assertEquals(PdConnection.REFUSED, notice(c, "req-1"), "a third for a decoder of two ranks");
            assertEquals(PdConnection.REFUSED, notice(c, "nobody-waits-for-this"));
            assertTrue(board.await("req-1", Duration.ofSeconds(1)));
            assertEquals(PdConnection.REFUSED, notice(c, "req-1"), "after its wait, its request is gone");
            assertEquals(2, board.counted());
            assertEquals(1, board.extra());
            assertEquals(2, board.unknown());
            assertEquals(0, server.authFailures() + server.tagFailures() + server.protocolErrors());
        }
    }

    @Test
    void aPrefillersConnectionOutlivesTheFrameTimeoutBetweenNotices() throws Exception {
        PdNoticeBoard board = new PdNoticeBoard(4);
        try (PdNoticeServer server = new PdNoticeServer("127.0.0.1", 0, TOKEN, Duration.ofMillis(500), board);
             PdConnection c = connect(server)) {
            board.expect("req-1", 1);
            assertEquals(PdConnection.OK, notice(c, "req-1"));
            Thread.sleep(1_600); // idle between requests for more than three frame timeouts
            board.expect("req-2", 1);
            assertEquals(PdConnection.OK, notice(c, "req-2"), "the kept connection was closed while idle");
        }
    }

    @Test
    void aWrongProofIsAnsweredFailCountedAndHungUpOnAfterTheGuessingDelay() throws Exception {
        PdNoticeBoard board = new PdNoticeBoard(4);
        board.expect("req-1", 1);
        try (PdNoticeServer server = start(board);
             SocketChannel c = raw(server)) {
            LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO, LmSession.NONCE_BYTES,
                    LmProtocol.PLACEHOLDER_KEY)), ByteBuffer.wrap(new byte[LmSession.NONCE_BYTES]));
            LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES + LmSession.NONCE_BYTES + LmSession.PROOF_BYTES);
            LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF, LmSession.PROOF_BYTES,
                    LmProtocol.PLACEHOLDER_KEY)), ByteBuffer.wrap(new byte[LmSession.PROOF_BYTES]));
            assertEquals(LmProtocol.FAIL, LmProtocol.replyCode(LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES)));
            long failed = System.nanoTime();
            writeUntagged(c, PdMessages.encode(new ProxyNotif("req-1")));
            assertHungUp(c);
            long ms = (System.nanoTime() - failed) / 1_000_000;
            assertTrue(ms >= PdReceiveServer.AUTH_FAILURE_DELAY_MS - 20, "hung up " + ms + " ms after FAIL: the delay "
                    + "that slows guessing was skipped");
            awaitTrue(() -> server.authFailures() == 1, "the failure is counted");
            assertEquals(0, board.counted(), "nothing posted");
        }
    }

    @Test
    void aNoticeWithAWrongTagClosesItsConnectionCountedAndIsNotPosted() throws Exception {
        PdNoticeBoard board = new PdNoticeBoard(4);
        board.expect("req-1", 1);
        try (PdNoticeServer server = start(board);
             SocketChannel c = raw(server)) {
            LmSession.authenticate(c, TOKEN); // a real handshake, then a frame whose tag is not the session's
            writeUntagged(c, PdMessages.encode(new ProxyNotif("req-1")));
            assertHungUp(c);
            awaitTrue(() -> server.tagFailures() == 1, "the tag failure is counted");
            assertEquals(0, board.counted(), "the notice was not posted");
            assertFalse(board.await("req-1", Duration.ofMillis(50)));
        }
    }

    @Test
    void anythingButANoticeClosesItsConnectionCounted() throws Exception {
        PdNoticeBoard board = new PdNoticeBoard(4);
        try (PdNoticeServer server = start(board)) {
            try (PdConnection c = connect(server)) {
                c.sendAck(PdConnection.OK);
                assertThrows(IOException.class, c::receive, "an acknowledgement where a notice belongs");
            }
            awaitTrue(() -> server.protocolErrors() == 1, "counted");
            try (PdConnection c = connect(server)) {
                c.sendMessage("not msgpack".getBytes(StandardCharsets.UTF_8));
                assertThrows(IOException.class, c::receive, "a message that is no ProxyNotif");
            }
            awaitTrue(() -> server.protocolErrors() == 2, "counted");
            try (SocketChannel c = raw(server)) {
                LmSession.authenticate(c, TOKEN);
                // A header announcing one byte more than the port takes: refused before its body is sent.
                LmProtocol.writeFully(c, ByteBuffer.allocate(5).putInt(4_097).put(PdConnection.MESSAGE).flip());
                assertHungUp(c);
            }
            awaitTrue(() -> server.protocolErrors() == 3, "counted");
            assertEquals(0, server.authFailures() + server.tagFailures());
        }
    }

    @Test
    void connectionsOverTheCapAreHungUpOnAtOnceAndCloseDoesNotWaitForHeldOnes() throws Exception {
        PdNoticeServer server = start(new PdNoticeBoard(4));
        List<SocketChannel> held = new ArrayList<>();
        try {
            for (int i = 0; i < PdNoticeServer.MAX_CONNECTIONS; i++) { // each silent in its handshake
                held.add(raw(server));
            }
            try (SocketChannel over = raw(server)) {
                long t0 = System.nanoTime();
                assertHungUp(over);
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(ms < 5_000, "hung up after " + ms + " ms: it was served, not refused");
            }
            long t0 = System.nanoTime();
            assertTimeoutPreemptively(BOUND, server::close);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 5_000, "close took " + ms + " ms: it waited for connections in their handshakes");
            for (SocketChannel c : held) {
                assertHungUp(c);
            }
        } finally {
            server.close();
            for (SocketChannel c : held) {
                c.close();
            }
        }
    }

    @Test
    void aPortInUseIsAClearErrorAndHoldsNoSocket() throws IOException {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            long before = openFiles();
            for (int i = 0; i < 50; i++) {
                IOException e = assertThrows(IOException.class, () -> new PdNoticeServer("127.0.0.1", taken.getLocalPort(),
                        TOKEN, TIMEOUT, new PdNoticeBoard(1)));
                assertTrue(e.getMessage().contains("cannot bind the proxy's notice port 127.0.0.1:" + taken.getLocalPort()),
                        e.getMessage());
            }
            long after = openFiles();
            assertTrue(after - before < 25, "50 failed starts left " + (after - before) + " descriptors open");
        }
    }

    /** This process's open file descriptors (Linux). */
    private static long openFiles() throws IOException {
        try (var fds = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    /** A message frame with an all-zero tag. */
    private static void writeUntagged(SocketChannel c, byte[] body) throws IOException {
        ByteBuffer frame = ByteBuffer.allocate(5 + body.length + LmSession.TAG_BYTES).putInt(body.length)
                .put(PdConnection.MESSAGE).put(body);
        LmProtocol.writeFully(c, frame.clear());
    }

    /** The server closed {@code c}: a read ends (or resets) within {@link #BOUND}, answering nothing. */
    static void assertHungUp(SocketChannel c) throws IOException {
        c.socket().setSoTimeout((int) BOUND.toMillis());
        try {
            int n = c.socket().getInputStream().read();
            assertEquals(-1, n, "closed without an answer");
        } catch (SocketTimeoutException e) {
            throw new AssertionError("still open after " + BOUND, e);
        } catch (IOException e) {
            // reset: closed as well
        }
    }

    static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + BOUND.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + ": not within " + BOUND);
            }
            Thread.sleep(5);
        }
    }
}
