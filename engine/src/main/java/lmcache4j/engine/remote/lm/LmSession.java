package lmcache4j.engine.remote.lm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Objects;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The keyed side of an {@code lm://} connection to a server with a token (lmcache4j's extension;
 * LMCache's clients and server have none): a challenge-response handshake in which the token never
 * crosses the wire, then a tag on every payload in both directions.
 *
 * <p><b>Handshake.</b> The client sends AUTH_HELLO with a fresh 32-byte nonce {@code cn}; the server
 * answers with its own nonce {@code sn} and {@link #serverProof}; the client checks that proof
 * before it sends anything keyed (so a squatter on a peer's port, or a peer the controller names
 * wrongly, learns nothing and serves nothing), then sends AUTH_PROOF with {@link #clientProof}.
 * Proofs and the session key are HMAC-SHA256 of the token under one label each, over
 * {@code cn ‖ sn}.
 *
 * <p><b>Tags.</b> Every GET reply that carries a payload, and every PUT payload, is followed by a
 * 16-byte {@link PayloadTag}: a Poly1305 tag (RFC 8439's AEAD with the payload as associated data)
 * under the session key, over the request header (which holds the key), the reply header and the
 * payload. A nonce per direction and message number means a tag cannot be replayed on another
 * message, key or connection. Unlike the CRC32C a peer sends, a MITM or a peer without the token
 * cannot forge it.
 */
public final class LmSession {
    /** The size of each side's nonce. */
    public static final int NONCE_BYTES = 32;
    /** The size of a proof (HMAC-SHA256). */
    public static final int PROOF_BYTES = 32;
    /** The size of a payload tag (Poly1305). */
    public static final int TAG_BYTES = PayloadTag.BYTES;

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final byte SERVER_TO_CLIENT = 1;
    private static final byte CLIENT_TO_SERVER = 2;

    private final PayloadTag serverToClient;
    private final PayloadTag clientToServer;

    private LmSession(byte[] sessionKey) {
        this.serverToClient = new PayloadTag(sessionKey, SERVER_TO_CLIENT);
        this.clientToServer = new PayloadTag(sessionKey, CLIENT_TO_SERVER);
    }

    /** A fresh random nonce. */
    public static byte[] nonce() {
        byte[] n = new byte[NONCE_BYTES];
        RANDOM.nextBytes(n);
        return n;
    }

    /** What a server that holds {@code token} answers to the client nonce {@code cn} with its nonce {@code sn}. */
    public static byte[] serverProof(byte[] token, byte[] cn, byte[] sn) {
        return hmac(token, "lmcache4j lm:// server proof v1", cn, sn);
    }

    /** What a client that holds {@code token} sends once the server has proved itself. */
    public static byte[] clientProof(byte[] token, byte[] cn, byte[] sn) {
        return hmac(token, "lmcache4j lm:// client proof v1", cn, sn);
    }

    /** Whether {@code presented} is {@code expected}, in time that does not depend on where they differ. */
    public static boolean matches(byte[] expected, byte[] presented) {
        return MessageDigest.isEqual(expected, presented);
    }

    /** The session both sides hold after a handshake over {@code cn} and {@code sn}. */
    public static LmSession established(byte[] token, byte[] cn, byte[] sn) {
        return new LmSession(hmac(token, "lmcache4j lm:// payload key v1", cn, sn));
    }

    /** The tag of the next payload the server sends (a GET reply). */
    public PayloadTag serverToClient() {
        return serverToClient;
    }

    /** The tag of the next payload the client sends (a PUT). */
    public PayloadTag clientToServer() {
        return clientToServer;
    }

    /** A server that does not prove it holds the token, or that refuses this client's proof. */
    public static final class AuthenticationException extends IOException {
        private static final long serialVersionUID = 1L;

        public AuthenticationException(String message) {
            super(message);
        }
    }

    /**
     * The client side of the handshake on a fresh connection: nothing keyed is sent before the
     * server has proved it holds {@code token}.
     *
     * @throws AuthenticationException when the server takes no token, cannot prove it holds this one,
     *                                 or refuses this client's proof
     * @throws IOException             when the connection fails
     */
    public static LmSession authenticate(ByteChannel ch, byte[] token) throws IOException {
        byte[] cn = nonce();
        // Header and payload in one write each: two small writes would meet Nagle and delayed ACKs.
        LmProtocol.writeFully(ch, ByteBuffer.wrap(concat(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO, cn.length,
                LmProtocol.PLACEHOLDER_KEY), cn)));
        byte[] reply = LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES);
        int expected = NONCE_BYTES + PROOF_BYTES;
        if (LmProtocol.replyCode(reply) != LmProtocol.SUCCESS || LmProtocol.replyLength(reply) != expected) {
            throw new AuthenticationException("does not take a token (it answered AUTH_HELLO with code "
                    + LmProtocol.replyCode(reply) + ", length " + LmProtocol.replyLength(reply) + ")");
        }
        byte[] answer = LmProtocol.readFully(ch, expected);
        byte[] sn = Arrays.copyOfRange(answer, 0, NONCE_BYTES);
        if (!matches(serverProof(token, cn, sn), Arrays.copyOfRange(answer, NONCE_BYTES, expected))) {
            throw new AuthenticationException("could not prove it holds the token; nothing keyed was sent to it");
        }
        byte[] proof = clientProof(token, cn, sn);
        LmProtocol.writeFully(ch, ByteBuffer.wrap(concat(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF, proof.length,
                LmProtocol.PLACEHOLDER_KEY), proof)));
        if (LmProtocol.replyCode(LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES)) != LmProtocol.SUCCESS) {
            throw new AuthenticationException("refused the token");
        }
        return established(token, cn, sn);
    }

    /** The arrays one after the other. */
    public static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] all = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, all, at, p.length);
            at += p.length;
        }
        return all;
    }

    private static byte[] hmac(byte[] token, String label, byte[] cn, byte[] sn) {
        Objects.requireNonNull(token, "token");
        if (cn.length != NONCE_BYTES || sn.length != NONCE_BYTES) {
            throw new IllegalArgumentException("nonces must be " + NONCE_BYTES + " bytes");
        }
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(token, "HmacSHA256"));
            mac.update(label.getBytes(StandardCharsets.US_ASCII));
            mac.update(cn);
            mac.update(sn);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
        }
    }
}
