package lmcache4j.engine.remote.lm;

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

    /** How the peer answers: its reply code and length to the hello, whether its proof is right, its answer to the client's proof. */
    private record Peer(int helloCode, int helloLength, boolean provesToken, int proofAnswer) {
        static Peer honest() {
            return new Peer(LmProtocol.SUCCESS, LmSession.NONCE_BYTES + LmSession.PROOF_BYTES, true, LmProtocol.SUCCESS);
        }
    }

    /** What the peer saw: the client's nonce, its own, and the client's proof (null when none came). */
    private record Seen(byte[] cn, byte[] sn, byte[] clientProof, int bytesAfterHello) {
    }

    @Test
    void withAnHonestPeerBothEndsHoldTheSameSession() throws Exception {
        Run run = run(Peer.honest());
        LmSession client = run.client.get(10, TimeUnit.SECONDS);
        Seen seen = run.peer.get(10, TimeUnit.SECONDS);
        assertArrayEquals(LmSession.clientProof(TOKEN, seen.cn(), seen.sn()), seen.clientProof(), "the client proved the token");
        LmSession server = LmSession.established(TOKEN, seen.cn(), seen.sn());
        byte[] body = "payload".getBytes(StandardCharsets.UTF_8);
        byte[] tag = server.serverToClient().next().update(body).finish();
        assertTrue(client.serverToClient().next().update(body).verify(tag), "both ends derived one session key");
    }

    @Test
    void aPeerThatTakesNoTokenIsRefused() throws Exception {
        for (Peer peer : new Peer[] {new Peer(LmProtocol.FAIL, 0, true, LmProtocol.SUCCESS),
                new Peer(LmProtocol.SUCCESS, LmSession.NONCE_BYTES, true, LmProtocol.SUCCESS)}) {
            Run run = run(peer);
            LmSession.AuthenticationException e = failure(run);
            assertTrue(e.getMessage().startsWith("does not take a token"), e.getMessage());
        }
    }

    @Test
    void aPeerThatCannotProveTheTokenIsSentNothingMore() throws Exception {
        Run run = run(new Peer(LmProtocol.SUCCESS, LmSession.NONCE_BYTES + LmSession.PROOF_BYTES, false, LmProtocol.SUCCESS));
        LmSession.AuthenticationException e = failure(run);
        assertTrue(e.getMessage().contains("could not prove it holds the token"), e.getMessage());
        Seen seen = run.peer.get(10, TimeUnit.SECONDS);
        assertEquals(null, seen.clientProof());
        assertEquals(0, seen.bytesAfterHello(), "no proof, no key: the squatter learns nothing");
    }

    @Test
    void aPeerThatRefusesTheClientsProofEndsTheHandshake() throws Exception {
        Run run = run(new Peer(LmProtocol.SUCCESS, LmSession.NONCE_BYTES + LmSession.PROOF_BYTES, true, LmProtocol.FAIL));
        LmSession.AuthenticationException e = failure(run);
        assertEquals("refused the token", e.getMessage());
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
                client.complete(LmSession.authenticate(ch, TOKEN));
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
        assertEquals(LmSession.NONCE_BYTES, hello.length());
        byte[] cn = LmProtocol.readFully(c, LmSession.NONCE_BYTES);
        byte[] sn = LmSession.nonce();
        byte[] proof = peer.provesToken() ? LmSession.serverProof(TOKEN, cn, sn)
                : LmSession.serverProof("a guess".getBytes(StandardCharsets.UTF_8), cn, sn);
        byte[] body = LmSession.concat(sn, proof);
        LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(peer.helloCode(), peer.helloLength())),
                ByteBuffer.wrap(body, 0, Math.min(body.length, peer.helloLength())));
        if (peer.helloCode() != LmProtocol.SUCCESS || peer.helloLength() != body.length || !peer.provesToken()) {
            return new Seen(cn, sn, null, drain(c));
        }
        LmProtocol.ClientHeader header = LmProtocol.decodeClient(LmProtocol.readFully(c, LmProtocol.CLIENT_HEADER_BYTES));
        assertEquals(LmProtocol.AUTH_PROOF, header.command());
        byte[] clientProof = LmProtocol.readFully(c, header.length());
        LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(peer.proofAnswer())));
        return new Seen(cn, sn, clientProof, 0);
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
