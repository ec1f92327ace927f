package lmcache4j.server.lm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmProtocol.ClientHeader;
import lmcache4j.engine.remote.lm.LmProtocol.ProtocolException;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.remote.lm.PayloadTag;

/**
 * The server's side of {@link LmSession}'s challenge-response, first on every connection of a
 * server with a token: this server proves it holds the token, then checks the client's proof. A
 * wrong proof is answered FAIL after the throttle (guesses cost time, however many connections
 * make them) and yields no session: the connection must be closed, never served.
 */
final class LmServerHandshake {
    private final byte[] token;
    private final PayloadTag.Algorithm tagPreference;
    private final AuthThrottle throttle;
    private final RateLimitedLog failureLog;
    private final AtomicLong failures = new AtomicLong();

    LmServerHandshake(byte[] token, AuthThrottle throttle, RateLimitedLog failureLog) {
        this(token, throttle, failureLog, PayloadTag.Algorithm.preferred());
    }

    /** @param tagPreference the payload tag this server prefers (AES-GCM is chosen when either side does) */
    LmServerHandshake(byte[] token, AuthThrottle throttle, RateLimitedLog failureLog, PayloadTag.Algorithm tagPreference) {
        this.tagPreference = Objects.requireNonNull(tagPreference, "tagPreference");
        this.token = Objects.requireNonNull(token, "token").clone();
        this.throttle = Objects.requireNonNull(throttle, "throttle");
        this.failureLog = Objects.requireNonNull(failureLog, "failureLog");
    }

    /**
     * Runs the handshake {@code hello} opens on {@code c}.
     *
     * @return the connection's session; empty when the client's proof was wrong (FAIL was sent)
     * @throws ProtocolException when the client sends anything but AUTH_HELLO and AUTH_PROOF of their sizes
     */
    Optional<LmSession> perform(ServerConnection c, ClientHeader hello) throws IOException, InterruptedException {
        if (hello.command() == LmProtocol.AUTH_RETIRED) {
            throw new ProtocolException("AUTH with the token in clear is retired: the client predates lmcache4j's"
                    + " AUTH_HELLO handshake");
        }
        if (hello.command() != LmProtocol.AUTH_HELLO || !LmSession.Accepting.helloLength(hello.length())) {
            throw new ProtocolException("command " + hello.command() + " (length " + hello.length()
                    + ") where a server with a token expects AUTH_HELLO with a " + LmSession.NONCE_BYTES
                    + "-byte nonce and a payload tag offer");
        }
        LmSession.Accepting handshake;
        try {
            handshake = LmSession.Accepting.hello(LmProtocol.readFully(c, hello.length()), tagPreference);
        } catch (IllegalArgumentException e) {
            throw new ProtocolException("a hello out of protocol: " + e.getMessage());
        }
        LmProtocol.writeFully(c, ByteBuffer.wrap(handshake.answer(token)));
        ClientHeader proof = LmProtocol.decodeClient(LmProtocol.readFully(c, LmProtocol.CLIENT_HEADER_BYTES));
        if (proof.command() != LmProtocol.AUTH_PROOF || proof.length() != LmSession.PROOF_BYTES) {
            throw new ProtocolException("command " + proof.command() + " (length " + proof.length()
                    + ") where AUTH_PROOF with a " + LmSession.PROOF_BYTES + "-byte proof was expected");
        }
        byte[] presented = LmProtocol.readFully(c, LmSession.PROOF_BYTES);
        if (!handshake.proves(token, presented)) {
            long n = failures.incrementAndGet();
            throttle.awaitFailureSlot();
            failureLog.log("lm:// server: wrong token from " + c + "; closing (wrong tokens so far: " + n + ")");
            reply(c, LmProtocol.FAIL);
            return Optional.empty();
        }
        reply(c, LmProtocol.SUCCESS);
        return Optional.of(handshake.session(token));
    }

    /** Wrong proofs so far. */
    long failures() {
        return failures.get();
    }

    /** A handshake sent to a server without a token: FAIL, so the client says this server takes none. */
    static void refuse(ServerConnection c, ClientHeader h) throws IOException {
        if (h.length() < 0 || h.length() > LmSession.HELLO_BYTES) {
            throw new ProtocolException("command " + h.command() + " with length " + h.length());
        }
        LmProtocol.skipFully(c, h.length());
        reply(c, LmProtocol.FAIL);
    }

    private static void reply(ServerConnection c, int code) throws IOException {
        LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(code)));
    }
}
