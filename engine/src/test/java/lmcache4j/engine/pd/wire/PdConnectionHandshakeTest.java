package lmcache4j.engine.pd.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.remote.lm.PayloadTag;

/**
 * The PD server's side of the handshake against a client written against the wire: the tag the
 * client offers decides the session when it is AES-GCM, a hello without an offer (lmcache4j before the
 * choice) gets Poly1305 under the first proofs, and an offer of no algorithm is out of protocol.
 * Each session is checked by a frame the client tags as it believes the session tags.
 */
@Timeout(30)
class PdConnectionHandshakeTest {
    private static final byte[] TOKEN = "pd-handshake-test-token-0123456789".getBytes(StandardCharsets.UTF_8);
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    @Test
    void aClientOfferingAesGcmGetsAesGcmWhateverTheServerPrefers() throws Exception {
        for (PayloadTag.Algorithm own : PayloadTag.Algorithm.values()) {
            assertEquals(PayloadTag.Algorithm.AES_GCM, handshake(PayloadTag.Algorithm.AES_GCM.code(), own));
        }
        assertEquals(PayloadTag.Algorithm.POLY1305, handshake(PayloadTag.Algorithm.POLY1305.code(),
                PayloadTag.Algorithm.POLY1305));
        assertEquals(PayloadTag.Algorithm.AES_GCM, handshake(PayloadTag.Algorithm.POLY1305.code(), PayloadTag.Algorithm.AES_GCM));
    }

    @Test
    void aHelloWithoutAnOfferGetsPoly1305UnderTheFirstProofs() throws Exception {
        for (PayloadTag.Algorithm own : PayloadTag.Algorithm.values()) {
            assertEquals(PayloadTag.Algorithm.POLY1305, handshake(-1, own));
        }
    }

    @Test
    void anOfferOfNoAlgorithmIsOutOfProtocol() throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> handshake(9, PayloadTag.Algorithm.POLY1305));
        assertTrue(e.getCause() instanceof PdProtocolException, String.valueOf(e.getCause()));
        assertTrue(e.getCause().getMessage().contains("no payload tag algorithm has code 9"), e.getCause().getMessage());
    }

    @Test
    void aHelloOfAnotherLengthIsRefusedBeforeItsBytesAreRead() throws Exception {
        // Integer.MAX_VALUE would be a 2 GiB read if the length were trusted
        for (int length : new int[] {0, LmSession.NONCE_BYTES - 1, LmSession.HELLO_BYTES + 1, Integer.MAX_VALUE, -1}) {
            try (ServerSocketChannel listener = ServerSocketChannel.open()
                    .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                 SocketChannel c = SocketChannel.open(listener.getLocalAddress());
                 java.net.Socket socket = listener.accept().socket()) {
                LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO, length,
                        LmProtocol.PLACEHOLDER_KEY)));
                PdProtocolException e = assertThrows(PdProtocolException.class,
                        () -> PdConnection.accept(socket, TOKEN, TIMEOUT, 1 << 20), "a hello of " + length + " bytes");
                assertTrue(e.getMessage().contains("(length " + length + ") where a PD server expects AUTH_HELLO"),
                        e.getMessage());
            }
        }
    }

    @Test
    void aWrongProofAfterAnOfferIsAnsweredFailAndGetsNoConnection() throws Exception {
        try (ServerSocketChannel listener = ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             SocketChannel c = SocketChannel.open(listener.getLocalAddress());
             java.net.Socket socket = listener.accept().socket()) {
            byte[] cn = LmSession.nonce();
            LmProtocol.writeFully(c, ByteBuffer.wrap(LmSession.concat(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO,
                    LmSession.HELLO_BYTES, LmProtocol.PLACEHOLDER_KEY), cn, new byte[] {(byte) PayloadTag.Algorithm.AES_GCM.code()})));
            CompletableFuture<Optional<PdConnection>> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return PdConnection.accept(socket, TOKEN, TIMEOUT, 1 << 20);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, r -> Thread.ofVirtual().start(r));
            byte[] reply = LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES);
            byte[] answer = LmProtocol.readFully(c, LmProtocol.replyLength(reply));
            byte[] sn = Arrays.copyOf(answer, LmSession.NONCE_BYTES);
            // the proof of another token, over the right nonces, offer and choice
            byte[] wrong = LmSession.clientProof("another token".getBytes(StandardCharsets.UTF_8), cn, sn,
                    PayloadTag.Algorithm.AES_GCM, PayloadTag.Algorithm.AES_GCM);
            LmProtocol.writeFully(c, ByteBuffer.wrap(LmSession.concat(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF,
                    wrong.length, LmProtocol.PLACEHOLDER_KEY), wrong)));
            assertEquals(LmProtocol.FAIL, LmProtocol.replyCode(LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES)));
            assertEquals(Optional.empty(), accepted.get(10, TimeUnit.SECONDS));
        }
    }

    /**
     * One handshake: the client offers {@code offer} (-1: a hello of the nonce alone) to a server that
     * prefers {@code own}, then sends a message tagged as it believes the session tags.
     *
     * @return the algorithm the server's answer named (Poly1305 for an answer without a choice), once the
     *         server has read the client's message with it
     */
    private static PayloadTag.Algorithm handshake(int offer, PayloadTag.Algorithm own) throws Exception {
        String before = System.getProperty(PayloadTag.PREFERENCE_PROPERTY);
        System.setProperty(PayloadTag.PREFERENCE_PROPERTY, own.toString());
        try (ServerSocketChannel listener = ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            CompletableFuture<byte[]> received = new CompletableFuture<>();
            Thread.ofVirtual().start(() -> {
                try (java.net.Socket socket = listener.accept().socket(); // closed by its taker, as the PD server does
                     PdConnection server = PdConnection.accept(socket, TOKEN, TIMEOUT, 1 << 20).orElseThrow()) {
                    received.complete(((PdConnection.Message) server.receive()).body());
                } catch (Throwable t) {
                    received.completeExceptionally(t);
                }
            });
            try (SocketChannel c = SocketChannel.open(listener.getLocalAddress())) {
                byte[] cn = LmSession.nonce();
                byte[] hello = offer < 0 ? cn : LmSession.concat(cn, new byte[] {(byte) offer});
                LmProtocol.writeFully(c, ByteBuffer.wrap(LmSession.concat(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO,
                        hello.length, LmProtocol.PLACEHOLDER_KEY), hello)));
                byte[] reply;
                try {
                    reply = LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES);
                } catch (IOException e) {
                    received.get(10, TimeUnit.SECONDS); // the server's reason
                    throw e;
                }
                byte[] answer = LmProtocol.readFully(c, LmProtocol.replyLength(reply));
                byte[] sn = Arrays.copyOf(answer, LmSession.NONCE_BYTES);
                byte[] serverProof = Arrays.copyOfRange(answer, LmSession.NONCE_BYTES, LmSession.NONCE_BYTES + LmSession.PROOF_BYTES);
                PayloadTag.Algorithm choice;
                byte[] clientProof;
                if (offer < 0) {
                    assertEquals(LmSession.NONCE_BYTES + LmSession.PROOF_BYTES, answer.length, "an answer without a choice");
                    assertArrayEquals(LmSession.serverProof(TOKEN, cn, sn), serverProof);
                    choice = PayloadTag.Algorithm.POLY1305;
                    clientProof = LmSession.clientProof(TOKEN, cn, sn);
                } else {
                    assertEquals(LmSession.ANSWER_BYTES, answer.length);
                    choice = PayloadTag.Algorithm.ofCode(answer[LmSession.ANSWER_BYTES - 1]);
                    PayloadTag.Algorithm offered = PayloadTag.Algorithm.ofCode(offer);
                    assertArrayEquals(LmSession.serverProof(TOKEN, cn, sn, offered, choice), serverProof);
                    clientProof = LmSession.clientProof(TOKEN, cn, sn, offered, choice);
                }
                LmProtocol.writeFully(c, ByteBuffer.wrap(LmSession.concat(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF,
                        clientProof.length, LmProtocol.PLACEHOLDER_KEY), clientProof)));
                assertEquals(LmProtocol.SUCCESS, LmProtocol.replyCode(LmProtocol.readFully(c, LmProtocol.SERVER_HEADER_BYTES)));
                byte[] body = "tagged as the client believes".getBytes(StandardCharsets.UTF_8);
                byte[] frameHeader = ByteBuffer.allocate(5).putInt(body.length).put(PdConnection.MESSAGE).array();
                byte[] tag = LmSession.established(TOKEN, cn, sn, choice).clientToServer().next().update(frameHeader)
                        .update(body).finish();
                LmProtocol.writeFully(c, ByteBuffer.wrap(LmSession.concat(frameHeader, body, tag)));
                assertArrayEquals(body, received.get(10, TimeUnit.SECONDS), "the server tags as the answer said");
                return choice;
            }
        } finally {
            if (before == null) {
                System.clearProperty(PayloadTag.PREFERENCE_PROPERTY);
            } else {
                System.setProperty(PayloadTag.PREFERENCE_PROPERTY, before);
            }
        }
    }
    /**
     * A connect that fails (nobody listening, or a server that hangs up at the hello) closes its socket: a
     * prefiller retrying against a decoder that is down or refuses it does not run out of file descriptors.
     */
    @Test
    void failedConnectsLeaveNoSocketOpen() throws Exception {
        int gone;
        try (ServerSocketChannel s = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            gone = ((InetSocketAddress) s.getLocalAddress()).getPort();
        }
        try (ServerSocketChannel refusing = ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            int port = ((InetSocketAddress) refusing.getLocalAddress()).getPort();
            Thread hangingUp = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        refusing.accept().close();
                    }
                } catch (IOException e) {
                    // closed
                }
            });
            int attempts = 40;
            long before = openDescriptors();
            for (int i = 0; i < attempts; i++) {
                assertThrows(IOException.class, () -> PdConnection.connect("127.0.0.1", gone, TOKEN, TIMEOUT, 1 << 20));
                assertThrows(LmSession.AuthenticationException.class,
                        () -> PdConnection.connect("127.0.0.1", port, TOKEN, TIMEOUT, 1 << 20));
            }
            long grown = openDescriptors() - before;
            assertTrue(grown < attempts / 4, grown + " more file descriptors open after " + 2 * attempts + " failed connects");
            refusing.close();
            hangingUp.join();
        }
    }

    /** This process's open file descriptors (Linux), for the doors' leak checks. */
    static long openDescriptors() throws IOException {
        try (var fds = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }
}
