package lmcache4j.engine.security;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import lmcache4j.engine.zmq.OwnedZContext;


@Timeout(30)
class DeploymentSecretTest {
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    @Test
    void theCurvePublicKeyIsNaClsForTheRfc7748TestVector() {
        // RFC 7748 section 6.1: Alice's private key and public key.
        byte[] secret = HexFormat.of().parseHex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
        byte[] expected = HexFormat.of().parseHex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        assertArrayEquals(expected, DeploymentSecret.curvePublicKey(secret));
    }

    @Test
    void theBearerTokenIsAcceptedAndNothingElse() {
        DeploymentSecret s = DeploymentSecret.of(SECRET);
        assertTrue(s.acceptsAuthorization("Bearer " + s.bearerToken()));
        assertTrue(s.acceptsAuthorization("bearer " + s.bearerToken()));
        assertFalse(s.acceptsAuthorization(null));
        assertFalse(s.acceptsAuthorization("Bearer "));
        assertFalse(s.acceptsAuthorization("Basic " + s.bearerToken()));
        assertFalse(s.acceptsAuthorization("Bearer " + DeploymentSecret.of("another secret of 32 bytes......"
                .getBytes(StandardCharsets.US_ASCII)).bearerToken()));
        assertFalse(s.bearerToken().contains(new String(SECRET, StandardCharsets.US_ASCII)), "the token is derived");
    }

    @Test
    void aSecretFileMustBeLongEnoughAndPrivate(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("secret");
        Files.write(file, (new String(SECRET, StandardCharsets.US_ASCII) + "\n").getBytes(StandardCharsets.US_ASCII));
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DeploymentSecret.fromFile(file)).getMessage()
                .contains("chmod 600"));
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        assertEquals(DeploymentSecret.of(SECRET).bearerToken(), DeploymentSecret.fromFile(file).bearerToken(),
                "the trailing newline is not part of the secret");
        Files.write(file, "short\n".getBytes(StandardCharsets.US_ASCII));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DeploymentSecret.fromFile(file)).getMessage()
                .contains("16 to 4096 bytes"));
        Files.write(file, new byte[5000]);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DeploymentSecret.fromFile(file)).getMessage()
                .contains("larger than 4096 bytes"));
        Files.write(file, new byte[0]);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DeploymentSecret.fromFile(file)).getMessage()
                .contains("this one 0"));
        Path none = dir.resolve("none");
        assertEquals("the secret file " + none + " does not exist; make one with: (umask 077; head -c 32 /dev/urandom | base64 > "
                + none + ")", assertThrows(IllegalArgumentException.class, () -> DeploymentSecret.fromFile(none)).getMessage());
        Path folder = Files.createDirectory(dir.resolve("folder"));
        assertEquals("the secret file " + folder + " is a directory; name the file that holds the secret",
                assertThrows(IllegalArgumentException.class, () -> DeploymentSecret.fromFile(folder)).getMessage(),
                "not chmod 600 advice for a directory");
        Path made = dir.resolve("made");
        DeploymentSecret created = DeploymentSecret.createFile(made);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(made)));
        assertEquals(created.bearerToken(), DeploymentSecret.fromFile(made).bearerToken());
    }

    @Test
    void onlyAMemberCompletesTheHandshake() throws Exception {
        DeploymentSecret secret = DeploymentSecret.of(SECRET);
        DeploymentSecret stranger = DeploymentSecret.of("a different secret, 32 bytes long".getBytes(StandardCharsets.US_ASCII));
        try (ZContext server = new OwnedZContext("test-deployment-secret-server", 1);
             ZContext clients = new OwnedZContext("test-deployment-secret-clients", 1);
             CurveGate gate = CurveGate.open(server, secret, "test")) {
            ZMQ.Socket router = server.createSocket(SocketType.ROUTER);
            secret.serve(router);
            router.setReceiveTimeOut(1000);
            int port = router.bindToRandomPort("tcp://127.0.0.1");

            ZMQ.Socket plain = clients.createSocket(SocketType.DEALER);
            plain.setLinger(0);
            plain.connect("tcp://127.0.0.1:" + port);
            plain.send("plain");
            ZMQ.Socket wrong = clients.createSocket(SocketType.DEALER);
            wrong.setLinger(0);
            stranger.connectAsMember(wrong);
            wrong.connect("tcp://127.0.0.1:" + port);
            wrong.send("stranger");
            ZMQ.Socket forged = clients.createSocket(SocketType.DEALER); // knows the server's key, not the client's
            forged.setLinger(0);
            byte[] forgedSecret = new byte[32];
            forgedSecret[0] = 7;
            forged.setCurveServerKey(secret.serverPublicKey());
            forged.setCurvePublicKey(DeploymentSecret.curvePublicKey(forgedSecret));
            forged.setCurveSecretKey(forgedSecret);
            forged.connect("tcp://127.0.0.1:" + port);
            forged.send("forged");
            assertNull(router.recv(), "no plain peer, peer with another secret or forged client key is heard");
            long deadline = System.nanoTime() + 15_000_000_000L; // the forged handshake may still be on its way (JeroMQ)
            while (gate.refused() < 1 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertTrue(gate.refused() >= 1, "the gate refused the forged key");

            ZMQ.Socket member = clients.createSocket(SocketType.DEALER);
            member.setLinger(0);
            secret.connectAsMember(member);
            member.connect("tcp://127.0.0.1:" + port);
            member.send("member");
            router.setReceiveTimeOut(5_000);
            router.recv(); // identity
            assertEquals("member", router.recvStr());
        }
    }
}
