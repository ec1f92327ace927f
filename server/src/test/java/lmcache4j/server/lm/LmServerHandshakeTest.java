package lmcache4j.server.lm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.ResourceBundle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmProtocol.ClientHeader;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.remote.lm.LmProtocol.ProtocolException;

/**
 * The server's side of the {@code lm://} handshake on one loopback connection, without the rest of
 * the server: a server without a token skips a handshake of up to a nonce's length and answers
 * FAIL (so the client learns that this server takes no token), anything longer is a protocol error,
 * and a wrong proof is logged.
 */
@Timeout(30)
class LmServerHandshakeTest {
    private static final byte MARK = 0x5A;
    private ServerSocketChannel listener;
    private SocketChannel client;
    private ServerConnection server;

    @BeforeEach
    void connect() throws IOException {
        listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        client = SocketChannel.open(listener.getLocalAddress());
        server = new ServerConnection(listener.accept(), true);
    }

    @AfterEach
    void disconnect() throws IOException {
        server.close();
        client.close();
        listener.close();
    }

    private static ClientHeader hello(int length) {
        return new ClientHeader(LmProtocol.AUTH_HELLO, new int[] {length, 0, 0, 0, 0, 0, 0}, 0, "");
    }

    @Test
    void aServerWithoutATokenSkipsAHelloOfUpToANonceAndAnswersFail() throws IOException {
        for (int length : new int[] {0, 1, LmSession.NONCE_BYTES}) {
            // the hello's payload, then a byte that must still be unread once the server refused
            ByteBuffer sent = ByteBuffer.allocate(length + 1);
            sent.position(length).put(MARK).flip();
            LmProtocol.writeFully(client, sent);
            LmServerHandshake.refuse(server, hello(length));
            byte[] reply = LmProtocol.readFully(client, LmProtocol.SERVER_HEADER_BYTES);
            assertEquals(LmProtocol.FAIL, LmProtocol.replyCode(reply), "a hello of " + length + " bytes is answered FAIL");
            assertEquals(MARK, LmProtocol.readFully(server, 1)[0], "exactly the hello's " + length + " bytes were skipped");
        }
    }

    @Test
    void aHelloLongerThanANonceOrOfNegativeLengthIsAProtocolError() {
        for (int length : new int[] {LmSession.NONCE_BYTES + 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
            ProtocolException e = assertThrows(ProtocolException.class, () -> LmServerHandshake.refuse(server, hello(length)),
                    "a hello of length " + length);
            assertTrue(e.getMessage().contains("length " + length), e.getMessage());
        }
    }

    @Test
    void aWrongProofIsAnsweredFailAndLogged() throws Exception {
        List<String> logged = new CopyOnWriteArrayList<>();
        LmServerHandshake handshake = new LmServerHandshake("the server's token".getBytes(StandardCharsets.UTF_8),
                new AuthThrottle(Duration.ZERO, 1000), new RateLimitedLog(new ListLogger(logged), System.Logger.Level.WARNING, 5_000));
        CompletableFuture<Integer> answer = CompletableFuture.supplyAsync(() -> {
            try {
                byte[] cn = LmSession.nonce();
                LmProtocol.writeFully(client, ByteBuffer.wrap(LmSession.concat(
                        LmProtocol.encodeClient(LmProtocol.AUTH_HELLO, LmSession.NONCE_BYTES, ""), cn)));
                byte[] challenge = LmProtocol.readFully(client, LmProtocol.SERVER_HEADER_BYTES);
                LmProtocol.skipFully(client, LmProtocol.replyLength(challenge));
                byte[] wrong = LmSession.clientProof("another token".getBytes(StandardCharsets.UTF_8), cn, new byte[LmSession.NONCE_BYTES]);
                LmProtocol.writeFully(client, ByteBuffer.wrap(LmSession.concat(
                        LmProtocol.encodeClient(LmProtocol.AUTH_PROOF, LmSession.PROOF_BYTES, ""), wrong)));
                return LmProtocol.replyCode(LmProtocol.readFully(client, LmProtocol.SERVER_HEADER_BYTES));
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        ClientHeader h = LmProtocol.decodeClient(LmProtocol.readFully(server, LmProtocol.CLIENT_HEADER_BYTES));
        Optional<LmSession> session = handshake.perform(server, h);
        assertEquals(Optional.empty(), session, "no session for a wrong proof");
        assertEquals(LmProtocol.FAIL, answer.get(10, TimeUnit.SECONDS));
        assertEquals(1, handshake.failures());
        assertEquals(1, logged.size(), "the wrong token is logged: " + logged);
        assertTrue(logged.getFirst().contains("wrong token"), logged.getFirst());
    }

    /** A logger that keeps its lines, to read what the handshake logged. */
    private record ListLogger(List<String> lines) implements System.Logger {
        @Override
        public String getName() {
            return "test";
        }

        @Override
        public boolean isLoggable(Level level) {
            return true;
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
            lines.add(msg);
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            lines.add(format);
        }
    }
}
