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
import lmcache4j.engine.remote.lm.PayloadTag;

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
        for (int length : new int[] {0, 1, LmSession.NONCE_BYTES, LmSession.HELLO_BYTES}) {
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
        for (int length : new int[] {LmSession.HELLO_BYTES + 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
            ProtocolException e = assertThrows(ProtocolException.class, () -> LmServerHandshake.refuse(server, hello(length)),
                    "a hello of length " + length);
            assertTrue(e.getMessage().contains("length " + length), e.getMessage());
        }
    }

    @Test
    void aServerWithATokenRefusesAHelloOfAnotherLengthBeforeReadingIt() {
        LmServerHandshake handshake = new LmServerHandshake("the server's token".getBytes(StandardCharsets.UTF_8),
                new AuthThrottle(Duration.ZERO, 1000), new RateLimitedLog(new ListLogger(new CopyOnWriteArrayList<>()),
                System.Logger.Level.WARNING, 5_000));
        for (int length : new int[] {0, LmSession.NONCE_BYTES - 1, LmSession.HELLO_BYTES + 1, Integer.MAX_VALUE, -1}) {
            ProtocolException e = assertThrows(ProtocolException.class, () -> handshake.perform(server, hello(length)),
                    "a hello of length " + length);
            assertTrue(e.getMessage().contains("(length " + length + ") where a server with a token expects AUTH_HELLO"),
                    e.getMessage());
        }
    }

    @Test
    void anOfferOfNoAlgorithmIsAProtocolError() throws Exception {
        LmServerHandshake handshake = new LmServerHandshake("the server's token".getBytes(StandardCharsets.UTF_8),
                new AuthThrottle(Duration.ZERO, 1000), new RateLimitedLog(new ListLogger(new CopyOnWriteArrayList<>()),
                System.Logger.Level.WARNING, 5_000));
        LmProtocol.writeFully(client, ByteBuffer.wrap(LmSession.concat(LmSession.nonce(), new byte[] {9})));
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> handshake.perform(server, hello(LmSession.HELLO_BYTES)));
        assertEquals("a hello out of protocol: no payload tag algorithm has code 9 (1 poly1305, 2 aes-gcm)", e.getMessage());
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

    @Test
    void theServersPreferenceForGmacIsTheSessionsAndAHelloWithoutAnOfferGetsPoly1305() throws Exception {
        byte[] token = "the server's token".getBytes(StandardCharsets.UTF_8);
        for (PayloadTag.Algorithm offer : PayloadTag.Algorithm.values()) {
            for (PayloadTag.Algorithm own : PayloadTag.Algorithm.values()) {
                try (SocketChannel c = SocketChannel.open(listener.getLocalAddress());
                     ServerConnection s = new ServerConnection(listener.accept(), true)) {
                    CompletableFuture<LmSession> client = CompletableFuture.supplyAsync(() -> {
                        try {
                            return LmSession.authenticate(c, token, offer);
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    });
                    LmServerHandshake handshake = new LmServerHandshake(token, new AuthThrottle(Duration.ZERO, 1000),
                            new RateLimitedLog(new ListLogger(new CopyOnWriteArrayList<>()), System.Logger.Level.WARNING,
                                    5_000), own);
                    LmSession session = handshake.perform(s, LmProtocol.decodeClient(
                            LmProtocol.readFully(s, LmProtocol.CLIENT_HEADER_BYTES))).orElseThrow();
                    LmSession mine = client.get(10, TimeUnit.SECONDS);
                    assertEquals(LmSession.choose(offer, own), session.algorithm(), offer + " offered to " + own);
                    assertEquals(session.algorithm(), mine.algorithm());
                    byte[] body = "a PUT payload".getBytes(StandardCharsets.UTF_8);
                    assertTrue(session.clientToServer().next().update(body).verify(mine.clientToServer().next().update(body)
                            .finish()), "one key and one algorithm on both ends");
                }
            }
        }
        // lmcache4j from before the choice: the nonce alone, answered without a choice, proved and tagged as then
        CompletableFuture<LmSession> legacy = CompletableFuture.supplyAsync(() -> {
            try {
                byte[] cn = LmSession.nonce();
                LmProtocol.writeFully(client, ByteBuffer.wrap(LmSession.concat(
                        LmProtocol.encodeClient(LmProtocol.AUTH_HELLO, LmSession.NONCE_BYTES, ""), cn)));
                byte[] header = LmProtocol.readFully(client, LmProtocol.SERVER_HEADER_BYTES);
                assertEquals(LmSession.NONCE_BYTES + LmSession.PROOF_BYTES, LmProtocol.replyLength(header), "no choice");
                byte[] answer = LmProtocol.readFully(client, LmProtocol.replyLength(header));
                byte[] sn = java.util.Arrays.copyOf(answer, LmSession.NONCE_BYTES);
                assertTrue(LmSession.matches(LmSession.serverProof(token, cn, sn), java.util.Arrays.copyOfRange(answer,
                        LmSession.NONCE_BYTES, answer.length)), "the first server proof");
                LmProtocol.writeFully(client, ByteBuffer.wrap(LmSession.concat(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF,
                        LmSession.PROOF_BYTES, ""), LmSession.clientProof(token, cn, sn))));
                assertEquals(LmProtocol.SUCCESS, LmProtocol.replyCode(LmProtocol.readFully(client, LmProtocol.SERVER_HEADER_BYTES)));
                return LmSession.established(token, cn, sn);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        LmServerHandshake handshake = new LmServerHandshake(token, new AuthThrottle(Duration.ZERO, 1000),
                new RateLimitedLog(new ListLogger(new CopyOnWriteArrayList<>()), System.Logger.Level.WARNING, 5_000),
                PayloadTag.Algorithm.AES_GCM);
        LmSession session = handshake.perform(server, LmProtocol.decodeClient(LmProtocol.readFully(server,
                LmProtocol.CLIENT_HEADER_BYTES))).orElseThrow();
        LmSession old = legacy.get(10, TimeUnit.SECONDS);
        assertEquals(PayloadTag.Algorithm.POLY1305, session.algorithm(), "even on a server that prefers AES-GCM");
        byte[] body = "a GET reply".getBytes(StandardCharsets.UTF_8);
        assertTrue(old.serverToClient().next().update(body).verify(session.serverToClient().next().update(body).finish()));
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
