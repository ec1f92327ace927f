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
 * <p><b>Handshake.</b> The client sends AUTH_HELLO with a fresh 32-byte nonce {@code cn} and the
 * code of the tag algorithm it computes fastest ({@link PayloadTag.Algorithm#preferred()}); the
 * server chooses AES-GCM when either side prefers it, else Poly1305 (a side without its fast Poly1305
 * would hold both back), and answers with its own nonce {@code sn}, {@link #serverProof} and its
 * choice; the client checks that proof before it sends anything keyed (so a squatter on a peer's
 * port, or a peer the controller names wrongly, learns nothing and serves nothing), then sends
 * AUTH_PROOF with {@link #clientProof}. Proofs and the session key are HMAC-SHA256 of the token
 * under one label each, over {@code cn ‖ sn} and, for the proofs, the offer and the choice, so
 * nobody between the two can change either. A server also takes the hello of lmcache4j before the
 * choice (the nonce alone, {@link #NONCE_BYTES} bytes): that session tags with Poly1305, under the
 * first proofs' labels.
 *
 * <p><b>Tags.</b> Every GET reply that carries a payload, and every PUT payload, is followed by a
 * 16-byte {@link PayloadTag} under the session key, over the request header (which holds the key),
 * the reply header and the payload. A nonce per direction and message number means a tag cannot be
 * replayed on another message, key or connection. Unlike the CRC32C a peer sends, a MITM or a peer without the token
 * cannot forge it.
 */
public final class LmSession {
    /** The size of each side's nonce. */
    public static final int NONCE_BYTES = 32;
    /** The size of a proof (HMAC-SHA256). */
    public static final int PROOF_BYTES = 32;
    /** The size of a payload tag. */
    public static final int TAG_BYTES = PayloadTag.BYTES;
    /** The size of the client's hello: its nonce and the code of the tag algorithm it prefers. */
    public static final int HELLO_BYTES = NONCE_BYTES + 1;
    /** The size of the server's answer to a hello: its nonce, its proof and the algorithm it chose. */
    public static final int ANSWER_BYTES = NONCE_BYTES + PROOF_BYTES + 1;

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final byte SERVER_TO_CLIENT = 1;
    private static final byte CLIENT_TO_SERVER = 2;

    private final PayloadTag serverToClient;
    private final PayloadTag clientToServer;

    private LmSession(PayloadTag.Algorithm algorithm, byte[] sessionKey) {
        this.serverToClient = new PayloadTag(algorithm, sessionKey, SERVER_TO_CLIENT);
        this.clientToServer = new PayloadTag(algorithm, sessionKey, CLIENT_TO_SERVER);
    }

    /** A fresh random nonce. */
    public static byte[] nonce() {
        byte[] n = new byte[NONCE_BYTES];
        RANDOM.nextBytes(n);
        return n;
    }

    /**
     * What a server that holds {@code token} answers to the client nonce {@code cn} with its nonce
     * {@code sn}, after a hello without an offer.
     */
    public static byte[] serverProof(byte[] token, byte[] cn, byte[] sn) {
        return hmac(token, "lmcache4j lm:// server proof v1", cn, sn);
    }

    /** What a client that holds {@code token} sends once the server has proved itself, after a hello without an offer. */
    public static byte[] clientProof(byte[] token, byte[] cn, byte[] sn) {
        return hmac(token, "lmcache4j lm:// client proof v1", cn, sn);
    }

    /** The server's proof when the client offered {@code offer} and the server chose {@code choice}. */
    public static byte[] serverProof(byte[] token, byte[] cn, byte[] sn, PayloadTag.Algorithm offer,
                                     PayloadTag.Algorithm choice) {
        return hmac(token, "lmcache4j lm:// server proof v2", cn, sn, offer.code(), choice.code());
    }

    /** The client's proof when it offered {@code offer} and the server chose {@code choice}. */
    public static byte[] clientProof(byte[] token, byte[] cn, byte[] sn, PayloadTag.Algorithm offer,
                                     PayloadTag.Algorithm choice) {
        return hmac(token, "lmcache4j lm:// client proof v2", cn, sn, offer.code(), choice.code());
    }

    /** What a server chooses when the client prefers {@code offer} and it prefers {@code own}: AES-GCM when either does. */
    public static PayloadTag.Algorithm choose(PayloadTag.Algorithm offer, PayloadTag.Algorithm own) {
        return offer == PayloadTag.Algorithm.AES_GCM || own == PayloadTag.Algorithm.AES_GCM ? PayloadTag.Algorithm.AES_GCM
                : PayloadTag.Algorithm.POLY1305;
    }

    /** Whether {@code presented} is {@code expected}, in time that does not depend on where they differ. */
    public static boolean matches(byte[] expected, byte[] presented) {
        return MessageDigest.isEqual(expected, presented);
    }

    /** The session both sides hold after a handshake over {@code cn} and {@code sn} that tags with Poly1305. */
    public static LmSession established(byte[] token, byte[] cn, byte[] sn) {
        return established(token, cn, sn, PayloadTag.Algorithm.POLY1305);
    }

    /** The session both sides hold after a handshake over {@code cn} and {@code sn} that chose {@code algorithm}. */
    public static LmSession established(byte[] token, byte[] cn, byte[] sn, PayloadTag.Algorithm algorithm) {
        String label = algorithm == PayloadTag.Algorithm.POLY1305 ? "lmcache4j lm:// payload key v1"
                : "lmcache4j lm:// " + algorithm + " key v1";
        return new LmSession(algorithm, hmac(token, label, cn, sn));
    }

    /** The algorithm of this session's tags. */
    public PayloadTag.Algorithm algorithm() {
        return serverToClient.algorithm();
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
     * The client side of the handshake on a fresh connection, offering this process's
     * {@linkplain PayloadTag.Algorithm#preferred() preferred} tag: nothing keyed is sent before the
     * server has proved it holds {@code token}.
     *
     * @throws AuthenticationException when the server takes no token, cannot prove it holds this one,
     *                                 or refuses this client's proof
     * @throws IOException             when the connection fails
     */
    public static LmSession authenticate(ByteChannel ch, byte[] token) throws IOException {
        return authenticate(ch, token, PayloadTag.Algorithm.preferred());
    }

    /** As {@link #authenticate(ByteChannel, byte[])}, offering {@code offer}. */
    public static LmSession authenticate(ByteChannel ch, byte[] token, PayloadTag.Algorithm offer) throws IOException {
        byte[] cn = nonce();
        byte[] reply;
        try { // a server that closes at once resets the hello's write, or the read after it
            // Header and payload in one write each: two small writes would meet Nagle and delayed ACKs.
            LmProtocol.writeFully(ch, ByteBuffer.wrap(concat(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO, HELLO_BYTES,
                    LmProtocol.PLACEHOLDER_KEY), cn, new byte[] {(byte) offer.code()})));
            reply = LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES);
        } catch (java.io.EOFException | java.net.SocketException e) {
            throw new AuthenticationException("closed the connection at this client's AUTH_HELLO (" + e.getMessage()
                    + "): a server at its limit of connections, an lmcache4j from before the handshake chose the"
                    + " payload tag (a " + NONCE_BYTES + "-byte hello), or not a server with a token");
        }
        if (LmProtocol.replyCode(reply) != LmProtocol.SUCCESS || LmProtocol.replyLength(reply) != ANSWER_BYTES) {
            throw new AuthenticationException("does not take a token (it answered AUTH_HELLO with code "
                    + LmProtocol.replyCode(reply) + ", length " + LmProtocol.replyLength(reply) + ")");
        }
        byte[] answer = LmProtocol.readFully(ch, ANSWER_BYTES);
        byte[] sn = Arrays.copyOfRange(answer, 0, NONCE_BYTES);
        PayloadTag.Algorithm choice;
        try {
            choice = PayloadTag.Algorithm.ofCode(answer[ANSWER_BYTES - 1] & 0xff);
        } catch (IllegalArgumentException e) {
            choice = null; // as a wrong proof: nothing says who sent it
        }
        if (choice == null || !matches(serverProof(token, cn, sn, offer, choice),
                Arrays.copyOfRange(answer, NONCE_BYTES, NONCE_BYTES + PROOF_BYTES))) {
            throw new AuthenticationException("could not prove it holds the token; nothing keyed was sent to it");
        }
        if (choice != choose(offer, choice)) {
            throw new AuthenticationException("chose " + choice + " tags where this client asked for " + offer
                    + "; nothing keyed was sent to it");
        }
        byte[] proof = clientProof(token, cn, sn, offer, choice);
        LmProtocol.writeFully(ch, ByteBuffer.wrap(concat(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF, proof.length,
                LmProtocol.PLACEHOLDER_KEY), proof)));
        if (LmProtocol.replyCode(LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES)) != LmProtocol.SUCCESS) {
            throw new AuthenticationException("refused the token");
        }
        return established(token, cn, sn, choice);
    }

    /**
     * The server's side of one handshake, from the client's hello: what to answer, the proof to
     * expect, and the session once that proof checks out.
     */
    public static final class Accepting {
        private final byte[] cn;
        private final PayloadTag.Algorithm offer; // null: a hello without an offer
        private final PayloadTag.Algorithm choice;
        private final byte[] sn = nonce();

        private Accepting(byte[] cn, PayloadTag.Algorithm offer, PayloadTag.Algorithm choice) {
            this.cn = cn;
            this.offer = offer;
            this.choice = choice;
        }

        /** Whether a hello of {@code length} bytes is one a server takes ({@link #NONCE_BYTES} or {@link #HELLO_BYTES}). */
        public static boolean helloLength(long length) {
            return length == NONCE_BYTES || length == HELLO_BYTES;
        }

        /**
         * Reads the client's hello, a server that prefers {@code own}.
         *
         * @throws IllegalArgumentException when it is of another length or offers no algorithm
         */
        public static Accepting hello(byte[] hello, PayloadTag.Algorithm own) {
            if (!helloLength(hello.length)) {
                throw new IllegalArgumentException("a hello of " + hello.length + " bytes, where " + NONCE_BYTES + " or "
                        + HELLO_BYTES + " were expected");
            }
            if (hello.length == NONCE_BYTES) {
                return new Accepting(hello.clone(), null, PayloadTag.Algorithm.POLY1305);
            }
            PayloadTag.Algorithm offer = PayloadTag.Algorithm.ofCode(hello[NONCE_BYTES] & 0xff);
            return new Accepting(Arrays.copyOf(hello, NONCE_BYTES), offer, choose(offer, own));
        }

        /** The answer to send: SUCCESS, this server's nonce, its proof and (after an offer) its choice. */
        public byte[] answer(byte[] token) {
            if (offer == null) {
                return concat(LmProtocol.encodeServer(LmProtocol.SUCCESS, NONCE_BYTES + PROOF_BYTES), sn,
                        serverProof(token, cn, sn));
            }
            return concat(LmProtocol.encodeServer(LmProtocol.SUCCESS, ANSWER_BYTES), sn,
                    serverProof(token, cn, sn, offer, choice), new byte[] {(byte) choice.code()});
        }

        /** Whether {@code presented} is the proof of a client that holds {@code token}. */
        public boolean proves(byte[] token, byte[] presented) {
            return matches(offer == null ? clientProof(token, cn, sn) : clientProof(token, cn, sn, offer, choice),
                    presented);
        }

        /** The session, once the client's proof checked out. */
        public LmSession session(byte[] token) {
            return established(token, cn, sn, choice);
        }
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

    private static byte[] hmac(byte[] token, String label, byte[] cn, byte[] sn, int... codes) {
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
            for (int c : codes) {
                mac.update((byte) c);
            }
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
        }
    }
}
