package lmcache4j.engine.remote.lm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The client's side of the handshake ({@link LmSession#authenticate}) against a peer on a loopback
 * socket that plays the server's part with LmSession's own proofs (the server itself is in the
 * server module): with an honest peer both ends hold the same session; a peer that takes no token,
 * cannot prove it holds this one, or refuses the client's proof ends the handshake with an
 * {@link LmSession.AuthenticationException}, and a peer that cannot prove itself is sent nothing
 * after the hello.
 */
@Timeout(30)
class LmSessionHandshakeTest {
    private static final byte[] TOKEN = "the deployment's token".getBytes(StandardCharsets.UTF_8);

    private static final PayloadTag.Algorithm POLY1305 = PayloadTag.Algorithm.POLY1305;
    private static final PayloadTag.Algorithm AES_GCM = PayloadTag.Algorithm.AES_GCM;

    /**
     * How the peer answers: its reply code and length to the hello, whether its proof is right, its
     * answer to the client's proof, the algorithm it says it chose, and the one its proof covers.
     */
    private record Peer(int helloCode, int helloLength, boolean provesToken, int proofAnswer, int choiceByte,
                        PayloadTag.Algorithm provedChoice, boolean offerAltered) {
        Peer(int helloCode, int helloLength, boolean provesToken, int proofAnswer, int choiceByte,
             PayloadTag.Algorithm provedChoice) {
            this(helloCode, helloLength, provesToken, proofAnswer, choiceByte, provedChoice, false);
        }

        Peer(int helloCode, int helloLength, boolean provesToken, int proofAnswer) {
            this(helloCode, helloLength, provesToken, proofAnswer, POLY1305.code(), POLY1305);
        }

        static Peer honest() {
            return choosing(POLY1305);
        }

        static Peer choosing(PayloadTag.Algorithm choice) {
            return new Peer(LmProtocol.SUCCESS, LmSession.ANSWER_BYTES, true, LmProtocol.SUCCESS, choice.code(), choice);
        }
    }

    /** What the peer saw: the client's nonce, its own, and the client's proof (null when none came). */
    private record Seen(byte[] cn, byte[] sn, int offer, byte[] clientProof, int bytesAfterHello) {
    }

    @Test
    void withAnHonestPeerBothEndsHoldTheSameSession() throws Exception {
        Run run = run(Peer.honest());
        LmSession client = run.client.get(10, TimeUnit.SECONDS);
        Seen seen = run.peer.get(10, TimeUnit.SECONDS);
        assertArrayEquals(LmSession.clientProof(TOKEN, seen.cn(), seen.sn(), POLY1305, POLY1305), seen.clientProof(),
                "the client proved the token");
        LmSession server = LmSession.established(TOKEN, seen.cn(), seen.sn(), POLY1305);
        byte[] body = "payload".getBytes(StandardCharsets.UTF_8);
        byte[] tag = server.serverToClient().next().update(body).finish();
        assertTrue(client.serverToClient().next().update(body).verify(tag), "both ends derived one session key");
    }

    @Test
    void aPeerThatTakesNoTokenIsRefused() throws Exception {
        for (Peer peer : new Peer[] {new Peer(LmProtocol.FAIL, 0, true, LmProtocol.SUCCESS),
                new Peer(LmProtocol.SUCCESS, LmSession.NONCE_BYTES, true, LmProtocol.SUCCESS),
                // a server from before the tag choice would not get this far (it closes at the longer hello)
                new Peer(LmProtocol.SUCCESS, LmSession.NONCE_BYTES + LmSession.PROOF_BYTES, true, LmProtocol.SUCCESS)}) {
            Run run = run(peer);
            LmSession.AuthenticationException e = failure(run);
            assertTrue(e.getMessage().startsWith("does not take a token"), e.getMessage());
        }
    }

    @Test
    void aPeerThatCannotProveTheTokenIsSentNothingMore() throws Exception {
        Run run = run(new Peer(LmProtocol.SUCCESS, LmSession.ANSWER_BYTES, false, LmProtocol.SUCCESS));
        LmSession.AuthenticationException e = failure(run);
        assertTrue(e.getMessage().contains("could not prove it holds the token"), e.getMessage());
        Seen seen = run.peer.get(10, TimeUnit.SECONDS);
        assertEquals(null, seen.clientProof());
        assertEquals(0, seen.bytesAfterHello(), "no proof, no key: the squatter learns nothing");
    }

    @Test
    void aPeerThatRefusesTheClientsProofEndsTheHandshake() throws Exception {
        Run run = run(new Peer(LmProtocol.SUCCESS, LmSession.ANSWER_BYTES, true, LmProtocol.FAIL));
        LmSession.AuthenticationException e = failure(run);
        assertEquals("refused the token", e.getMessage());
    }

    @Test
    void theServersChoiceOfTagIsTheSessionsAndAesGcmWinsWhenEitherSidePrefersIt() throws Exception {
        for (PayloadTag.Algorithm offer : PayloadTag.Algorithm.values()) {
            for (PayloadTag.Algorithm serverPrefers : PayloadTag.Algorithm.values()) {
                PayloadTag.Algorithm choice = LmSession.choose(offer, serverPrefers);
                assertEquals(offer == AES_GCM || serverPrefers == AES_GCM ? AES_GCM : POLY1305, choice);
                Run run = run(Peer.choosing(choice), offer);
                LmSession client = run.client.get(10, TimeUnit.SECONDS);
                Seen seen = run.peer.get(10, TimeUnit.SECONDS);
                assertEquals(offer.code(), seen.offer(), "the hello carried the client's offer");
                assertEquals(choice, client.algorithm());
                assertArrayEquals(LmSession.clientProof(TOKEN, seen.cn(), seen.sn(), offer, choice), seen.clientProof());
                LmSession server = LmSession.established(TOKEN, seen.cn(), seen.sn(), choice);
                byte[] body = "payload".getBytes(StandardCharsets.UTF_8);
                byte[] tag = server.serverToClient().next().update(body).finish();
                assertTrue(client.serverToClient().next().update(body).verify(tag), offer + " / " + serverPrefers);
                assertFalse(LmSession.established(TOKEN, seen.cn(), seen.sn(), choice == AES_GCM ? POLY1305 : AES_GCM)
                        .serverToClient().next().update(body).verify(tag), "each algorithm has its own key and tag");
            }
        }
    }

    @Test
    void aServerThatChoosesPoly1305WhereTheClientAskedForAesGcmIsSentNothingMore() throws Exception {
        Run run = run(Peer.choosing(POLY1305), AES_GCM);
        LmSession.AuthenticationException e = failure(run);
        assertEquals("chose poly1305 tags where this client asked for aes-gcm; nothing keyed was sent to it", e.getMessage());
        assertEquals(0, run.peer.get(10, TimeUnit.SECONDS).bytesAfterHello());
    }

    @Test
    void aChoiceTheServersProofDoesNotCoverIsRefused() throws Exception {
        // as a man in the middle would leave it: the choice byte changed, the proof over the original one
        for (Peer peer : new Peer[] {new Peer(LmProtocol.SUCCESS, LmSession.ANSWER_BYTES, true, LmProtocol.SUCCESS,
                AES_GCM.code(), POLY1305), new Peer(LmProtocol.SUCCESS, LmSession.ANSWER_BYTES, true, LmProtocol.SUCCESS,
                POLY1305.code(), AES_GCM), new Peer(LmProtocol.SUCCESS, LmSession.ANSWER_BYTES, true, LmProtocol.SUCCESS, 7,
                POLY1305)}) {
            Run run = run(peer);
            LmSession.AuthenticationException e = failure(run);
            assertTrue(e.getMessage().contains("could not prove it holds the token"), e.getMessage());
            assertEquals(0, run.peer.get(10, TimeUnit.SECONDS).bytesAfterHello());
        }
    }

    @Test
    void anOfferChangedOnTheWayIsCaughtByTheServersProof() throws Exception {
        // a man in the middle turned the client's Poly1305 into AES-GCM: the server's proof covers the offer it saw
        Run run = run(new Peer(LmProtocol.SUCCESS, LmSession.ANSWER_BYTES, true, LmProtocol.SUCCESS, AES_GCM.code(), AES_GCM,
                true));
        LmSession.AuthenticationException e = failure(run);
        assertTrue(e.getMessage().contains("could not prove it holds the token"), e.getMessage());
        assertEquals(0, run.peer.get(10, TimeUnit.SECONDS).bytesAfterHello());
    }

    @Test
    void aServerThatClosesAtTheHelloIsNamedAsOneFromBeforeTheChoice() throws Exception {
        ServerSocketChannel listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        Thread.ofVirtual().start(() -> {
            try (listener; SocketChannel c = listener.accept()) {
                LmProtocol.readFully(c, LmProtocol.CLIENT_HEADER_BYTES); // then closes, as such a server does
            } catch (IOException e) {
                // the client sees the close either way
            }
        });
        try (SocketChannel ch = SocketChannel.open(listener.getLocalAddress())) {
            LmSession.AuthenticationException e = assertThrows(LmSession.AuthenticationException.class,
                    () -> LmSession.authenticate(ch, TOKEN, POLY1305));
            assertTrue(e.getMessage().startsWith("closed the connection at this client's AUTH_HELLO"), e.getMessage());
        }
    }

    @Test
    void concatJoinsItsPartsInOrder() {
        assertArrayEquals(new byte[] {1, 2, 3, 4, 5}, LmSession.concat(new byte[] {1}, new byte[0], new byte[] {2, 3},
                new byte[] {4, 5}));
        assertArrayEquals(new byte[0], LmSession.concat());
        assertEquals(LmSession.PROOF_BYTES, LmSession.clientProof(TOKEN, LmSession.nonce(), LmSession.nonce()).length);
        assertThrows(IllegalArgumentException.class, () -> LmSession.clientProof(TOKEN, new byte[31], LmSession.nonce()));
    }

    // ---- the peer ----------------------------------------------------------------------------

    private record Run(CompletableFuture<LmSession> client, CompletableFuture<Seen> peer) {
    }

    private static LmSession.AuthenticationException failure(Run run) throws Exception {
        try {
            run.client.get(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof LmSession.AuthenticationException a) {
                run.peer.get(10, TimeUnit.SECONDS);
                return a;
            }
            throw e;
        }
        throw new AssertionError("the handshake succeeded");
    }

    private static Run run(Peer peer) throws IOException {
        return run(peer, POLY1305);
    }

    private static Run run(Peer peer, PayloadTag.Algorithm offer) throws IOException {
        ServerSocketChannel listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        CompletableFuture<Seen> seen = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try (listener; SocketChannel c = listener.accept()) {
                seen.complete(serve(c, peer));
            } catch (Throwable t) {
                seen.completeExceptionally(t);
            }
        });
        CompletableFuture<LmSession> client = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try (SocketChannel ch = SocketChannel.open(listener.getLocalAddress())) {
                client.complete(LmSession.authenticate(ch, TOKEN, offer));
            } catch (Throwable t) {
                client.completeExceptionally(t);
            }
        });
        return new Run(client, seen);
    }

    /** The server's part, written against the wire: hello, nonce and proof, then the client's proof and the answer. */
    private static Seen serve(SocketChannel c, Peer peer) throws IOException {
        LmProtocol.ClientHeader hello = LmProtocol.decodeClient(LmProtocol.readFully(c, LmProtocol.CLIENT_HEADER_BYTES));
        assertEquals(LmProtocol.AUTH_HELLO, hello.command());
        assertEquals(LmSession.HELLO_BYTES, hello.length());
        byte[] helloBytes = LmProtocol.readFully(c, LmSession.HELLO_BYTES);
        byte[] cn = java.util.Arrays.copyOf(helloBytes, LmSession.NONCE_BYTES);
        int offer = helloBytes[LmSession.NONCE_BYTES];
        PayloadTag.Algorithm offered = PayloadTag.Algorithm.ofCode(offer);
        if (peer.offerAltered()) {
            offered = offered == PayloadTag.Algorithm.AES_GCM ? PayloadTag.Algorithm.POLY1305 : PayloadTag.Algorithm.AES_GCM;
        }
        byte[] sn = LmSession.nonce();
        byte[] proof = LmSession.serverProof(peer.provesToken() ? TOKEN : "a guess".getBytes(StandardCharsets.UTF_8), cn, sn,
                offered, peer.provedChoice());
        byte[] body = LmSession.concat(sn, proof, new byte[] {(byte) peer.choiceByte()});
        LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(peer.helloCode(), peer.helloLength())),
                ByteBuffer.wrap(body, 0, Math.min(body.length, peer.helloLength())));
        boolean refusable = peer.choiceByte() != peer.provedChoice().code() || peer.offerAltered()
                || offered == PayloadTag.Algorithm.AES_GCM && peer.provedChoice() != PayloadTag.Algorithm.AES_GCM;
        if (peer.helloCode() != LmProtocol.SUCCESS || peer.helloLength() != body.length || !peer.provesToken() || refusable) {
            return new Seen(cn, sn, offer, null, drain(c));
        }
        LmProtocol.ClientHeader header = LmProtocol.decodeClient(LmProtocol.readFully(c, LmProtocol.CLIENT_HEADER_BYTES));
        assertEquals(LmProtocol.AUTH_PROOF, header.command());
        byte[] clientProof = LmProtocol.readFully(c, header.length());
        LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(peer.proofAnswer())));
        return new Seen(cn, sn, offer, clientProof, 0);
    }

    /** Bytes the client sends until it closes the connection (a reset, when it left our reply unread, too). */
    private static int drain(SocketChannel c) {
        int n = 0;
        ByteBuffer buf = ByteBuffer.allocate(4096);
        try {
            for (int r; (r = c.read(buf.clear())) > 0; ) {
                n += r;
            }
        } catch (IOException reset) {
            // closed
        }
        return n;
    }
}
