package lmcache4j.engine.security;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.InvalidKeyException;
import java.security.KeyFactory;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.spec.NamedParameterSpec;
import java.security.spec.XECPrivateKeySpec;
import java.security.spec.XECPublicKeySpec;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Optional;
import java.util.Set;

import javax.crypto.KeyAgreement;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.zeromq.ZMQ;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.config.P2pSettings;
import lmcache4j.engine.config.PdSettings;

/**
 * The one secret a deployment shares (controller, engines, lookup and P2P servers), and every
 * credential derived from it: the CurveZMQ key pairs of servers and clients, the controller's HTTP
 * bearer token. Each is HMAC-SHA256 of the secret under its own label, so no credential reveals
 * the secret or another credential.
 *
 * <p>ZeroMQ sockets use CURVE: a server socket needs its client's key to be the deployment's
 * ({@link CurveGate}), and a client knows the server's public key only through the secret, so a
 * peer without it can neither connect nor read the traffic.
 */
public final class DeploymentSecret {
    /** The environment variable naming the secret's file, when no option does. */
    public static final String FILE_ENV = "LMCACHE4J_SECRET_FILE";
    /** Fewer bytes than this is a password, not a secret. */
    public static final int MIN_BYTES = 16;
    private static final int MAX_BYTES = 4096;
    private static final int KEY_BYTES = 32;

    private final byte[] serverSecretKey;
    private final byte[] serverPublicKey;
    private final byte[] clientSecretKey;
    private final byte[] clientPublicKey;
    private final byte[] bearer;
    private final String p2pToken;

    private DeploymentSecret(byte[] secret) {
        if (secret.length < MIN_BYTES || secret.length > MAX_BYTES) {
            throw new IllegalArgumentException("a deployment secret has " + MIN_BYTES + " to " + MAX_BYTES
                    + " bytes, this one " + secret.length + " (make one with: head -c 32 /dev/urandom | base64)");
        }
        serverSecretKey = derive(secret, "lmcache4j curve server");
        serverPublicKey = curvePublicKey(serverSecretKey);
        clientSecretKey = derive(secret, "lmcache4j curve client");
        clientPublicKey = curvePublicKey(clientSecretKey);
        bearer = HexFormat.of().formatHex(derive(secret, "lmcache4j http bearer")).getBytes(StandardCharsets.US_ASCII);
        p2pToken = HexFormat.of().formatHex(derive(secret, "lmcache4j p2p token"));
    }

    /** The secret in {@code bytes} (tests and embedders). */
    public static DeploymentSecret of(byte[] bytes) {
        return new DeploymentSecret(bytes.clone());
    }

    /** The secret of {@code config}'s {@code deployment_secret_file}; empty when it names none. */
    public static Optional<DeploymentSecret> fromConfig(LMCacheEngineConfig config) {
        return config.deploymentSecretFile().map(f -> fromFile(Path.of(f)));
    }

    /**
     * The secret in {@code file}: its bytes, less trailing line breaks. The file must be readable
     * by its owner only (as ssh demands of a private key).
     *
     * @throws IllegalArgumentException naming the file and what is wrong with it
     */
    public static DeploymentSecret fromFile(Path file) {
        try {
            if (!Files.exists(file)) {
                throw new IllegalArgumentException("the secret file " + file + " does not exist; make one with: (umask 077; "
                        + "head -c 32 /dev/urandom | base64 > " + file + ")");
            }
            if (!Files.isRegularFile(file)) {
                throw new IllegalArgumentException("the secret file " + file + " is " + (Files.isDirectory(file) ? "a directory"
                        : "not a regular file") + "; name the file that holds the secret");
            }
            Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(file);
            if (permissions.stream().anyMatch(p -> p.name().startsWith("GROUP") || p.name().startsWith("OTHERS"))) {
                throw new IllegalArgumentException("the secret file " + file + " is readable by others ("
                        + PosixFilePermissions.toString(permissions) + "); chmod 600 it");
            }
            if (Files.size(file) > MAX_BYTES + 2) {
                throw new IllegalArgumentException("the secret file " + file + " is larger than " + MAX_BYTES + " bytes");
            }
            byte[] bytes = Files.readAllBytes(file);
            int end = bytes.length;
            while (end > 0 && (bytes[end - 1] == '\n' || bytes[end - 1] == '\r')) {
                end--;
            }
            return new DeploymentSecret(Arrays.copyOf(bytes, end));
        } catch (java.nio.file.AccessDeniedException e) {
            throw new IllegalArgumentException("cannot read the secret file " + file + ": permission denied (it must be "
                    + "readable by the user this process runs as)", e);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the secret file " + file + ": " + e, e);
        } catch (UnsupportedOperationException e) { // a file system without POSIX permissions
            throw new IllegalArgumentException("cannot tell who may read the secret file " + file
                    + ": keep it on a file system with POSIX permissions", e);
        }
    }

    /** A fresh random secret written to a new {@code file} readable by its owner only (for the demo). */
    public static DeploymentSecret createFile(Path file) throws IOException {
        return new DeploymentSecret(createTokenFile(file));
    }

    /**
     * 32 random bytes, in hex, written to a new {@code file} readable by its owner only: a secret, or a
     * {@code p2p_token} for a deployment whose control plane runs without one (the demo's {@code --insecure}).
     *
     * @return the file's bytes
     */
    public static byte[] createTokenFile(Path file) throws IOException {
        byte[] raw = new byte[KEY_BYTES];
        new SecureRandom().nextBytes(raw);
        byte[] text = HexFormat.of().formatHex(raw).getBytes(StandardCharsets.US_ASCII);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.write(file, text);
        return text;
    }

    /** Makes {@code socket} (before it binds) a CURVE server that only the deployment's clients pass. */
    public void serve(ZMQ.Socket socket) {
        socket.setZAPDomain(CurveGate.DOMAIN);
        socket.setCurveServer(true);
        socket.setCurveSecretKey(serverSecretKey);
    }

    /** Makes {@code socket} (before it connects) a CURVE client of the deployment's servers. */
    public void connectAsMember(ZMQ.Socket socket) {
        socket.setCurveServerKey(serverPublicKey);
        socket.setCurvePublicKey(clientPublicKey);
        socket.setCurveSecretKey(clientSecretKey);
    }

    /** The servers' public key (tests: a client that knows it but not the client key). */
    byte[] serverPublicKey() {
        return serverPublicKey.clone();
    }

    /** Whether {@code publicKey} is the deployment's client key (constant time). */
    boolean isMemberKey(byte[] publicKey) {
        return MessageDigest.isEqual(clientPublicKey, publicKey);
    }

    /**
     * The P2P transfer servers' token of an engine: its {@code p2p_token} when set, else the one
     * its deployment secret ({@code deployment_secret_file}) derives. {@link P2pSettings} exist only
     * with one of the two.
     */
    public static String p2pToken(LMCacheEngineConfig config, P2pSettings p2p) {
        return p2p.token().or(() -> config.deploymentSecretFile().map(f -> fromFile(Path.of(f)).p2pToken))
                .orElseThrow(() -> new IllegalStateException("P2P settings without p2p_token or deployment_secret_file"));
    }

    /**
     * The PD channel's token of an engine: its {@code p2p_token} when set, else the one its deployment
     * secret derives (the same as P2P's: one token for every peer transfer of a deployment).
     * {@link PdSettings} exist only with one of the two.
     */
    public static String pdToken(LMCacheEngineConfig config, PdSettings pd) {
        return pd.token().or(() -> config.deploymentSecretFile().map(f -> fromFile(Path.of(f)).p2pToken))
                .orElseThrow(() -> new IllegalStateException("PD settings without p2p_token or deployment_secret_file"));
    }

    /** The peer transfer token this secret derives: what {@link #p2pToken} and {@link #pdToken} give without a {@code p2p_token}. */
    public String peerTransferToken() {
        return p2pToken;
    }

    /** The HTTP bearer token: {@code Authorization: Bearer <token>}. */
    public String bearerToken() {
        return new String(bearer, StandardCharsets.US_ASCII);
    }

    /** Whether an {@code Authorization} header carries the bearer token (constant time in the token). */
    public boolean acceptsAuthorization(String header) {
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return false;
        }
        return MessageDigest.isEqual(bearer, header.substring(7).strip().getBytes(StandardCharsets.US_ASCII));
    }

    @Override
    public String toString() {
        return "DeploymentSecret[client key " + HexFormat.of().formatHex(clientPublicKey, 0, 4) + "...]";
    }

    private static byte[] derive(byte[] secret, String label) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            return mac.doFinal(label.getBytes(StandardCharsets.US_ASCII));
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    /** The X25519 public key of {@code secretKey}: the scalar times the base point (u = 9), as NaCl computes it. */
    static byte[] curvePublicKey(byte[] secretKey) {
        try {
            KeyFactory factory = KeyFactory.getInstance("XDH");
            PrivateKey key = factory.generatePrivate(new XECPrivateKeySpec(NamedParameterSpec.X25519, secretKey));
            PublicKey base = factory.generatePublic(new XECPublicKeySpec(NamedParameterSpec.X25519, BigInteger.valueOf(9)));
            KeyAgreement agreement = KeyAgreement.getInstance("X25519");
            agreement.init(key);
            agreement.doPhase(base, true);
            return agreement.generateSecret();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("X25519 is part of every JDK since 11", e);
        }
    }
}
