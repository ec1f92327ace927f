package lmcache4j.engine.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

import lmcache4j.engine.zmq.OwnedZContext;

/**
 * The gate as the ZAP handler RFC 27 describes, asked directly on its in-process endpoint as
 * JeroMQ asks it during a handshake: only a CURVE request in lmcache4j's domain with the
 * deployment's client key gets 200 (and the user id "member"); everything else, a request without
 * credentials included, gets 400 and is counted, and the gate goes on answering.
 * {@code DeploymentSecretTest} and the server module's {@code ControllerCurveGateTest} run it under
 * real CURVE handshakes.
 */
@Timeout(30)
class CurveGateTest {
    private static final String ZAP = "inproc://zeromq.zap.01";
    private static final DeploymentSecret SECRET = DeploymentSecret.of("the deployment's secret, 32 bytes".getBytes(
            StandardCharsets.US_ASCII));

    /** The member's public key, as a CURVE client of the deployment presents it. */
    private static byte[] memberKey(ZContext context) {
        ZMQ.Socket s = context.createSocket(SocketType.DEALER);
        SECRET.connectAsMember(s);
        byte[] key = s.getCurvePublicKey();
        context.destroySocket(s);
        return key;
    }

    private static List<String> ask(ZMQ.Socket zap, String version, String domain, String mechanism, byte[]... credentials) {
        ZMsg request = new ZMsg();
        request.add(version);
        request.add("request-7");
        request.add(domain);
        request.add("127.0.0.1");
        request.add(new byte[0]); // identity
        request.add(mechanism);
        for (byte[] c : credentials) {
            request.add(c);
        }
        request.send(zap);
        ZMsg reply = ZMsg.recvMsg(zap);
        assertNotNull(reply, "the gate answers");
        assertEquals(6, reply.size(), "version, request id, status, text, user, metadata: " + reply);
        List<String> fields = reply.stream().map(f -> new String(f.getData(), StandardCharsets.UTF_8)).toList();
        assertEquals("request-7", fields.get(1), "the request id is echoed");
        assertEquals("", fields.get(5), "no metadata");
        return fields.subList(0, 5);
    }

    @Test
    void onlyTheMembersCurveKeyInItsDomainIsAdmitted() {
        try (ZContext context = new OwnedZContext("test-curve-gate", 1); CurveGate gate = CurveGate.open(context, SECRET, "test")) {
            ZMQ.Socket zap = context.createSocket(SocketType.REQ);
            zap.setReceiveTimeOut(5_000);
            zap.connect(ZAP);
            byte[] member = memberKey(context);
            byte[] foreign = member.clone();
            foreign[0] ^= 1;
            assertEquals(List.of("1.0", "request-7", "200", "OK", "member"), ask(zap, "1.0", CurveGate.DOMAIN, "CURVE", member));
            assertEquals(0, gate.refused());
            List<String> refused = List.of("1.0", "request-7", "400", "not a member of this deployment", "");
            assertEquals(refused, ask(zap, "1.0", CurveGate.DOMAIN, "CURVE", foreign), "another key");
            assertEquals(refused, ask(zap, "1.0", "another-domain", "CURVE", member), "another domain");
            assertEquals(refused, ask(zap, "1.0", CurveGate.DOMAIN, "PLAIN", member), "another mechanism");
            assertEquals(refused, ask(zap, "1.0", CurveGate.DOMAIN, "NULL"), "no credentials at all");
            assertEquals(4, gate.refused());
            assertEquals("2.0", ask(zap, "2.0", CurveGate.DOMAIN, "CURVE", member).get(0), "the version is echoed");
            assertEquals("200", ask(zap, "1.0", CurveGate.DOMAIN, "CURVE", member).get(2), "and the gate still answers");
        }
    }

    @Test
    void anAdmittedHandshakeTellsItsAddressAndARefusedOneIsLoggedAtDebug() {
        RecordingLogger log = new RecordingLogger();
        List<String> admitted = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (ZContext context = new OwnedZContext("test-curve-gate-log", 1);
             CurveGate gate = CurveGate.open(context, SECRET, "test", admitted::add, log, context::createPoller)) {
            ZMQ.Socket zap = context.createSocket(SocketType.REQ);
            zap.setReceiveTimeOut(5_000);
            zap.connect(ZAP);
            byte[] member = memberKey(context);
            assertEquals("200", ask(zap, "1.0", CurveGate.DOMAIN, "CURVE", member).get(2));
            assertEquals(List.of("127.0.0.1"), admitted, "the member's address, told once");
            assertEquals("400", ask(zap, "1.0", CurveGate.DOMAIN, "PLAIN", member).get(2));
            assertEquals(List.of("127.0.0.1"), admitted, "a refused handshake is not admitted");
            assertEquals(1, gate.refused());
            assertEquals(List.of("refused a PLAIN handshake from 127.0.0.1: not the deployment's key"),
                    log.at(System.Logger.Level.DEBUG));
        }
        List<String> publicOpen = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (ZContext context = new OwnedZContext("test-curve-gate-admitted", 1);
             CurveGate gate = CurveGate.open(context, SECRET, "test", publicOpen::add)) {
            ZMQ.Socket zap = context.createSocket(SocketType.REQ);
            zap.setReceiveTimeOut(5_000);
            zap.connect(ZAP);
            assertEquals("200", ask(zap, "1.0", CurveGate.DOMAIN, "CURVE", memberKey(context)).get(2));
            assertEquals(List.of("127.0.0.1"), publicOpen, "the public open tells its consumer too");
            assertEquals(0, gate.refused(), "and it is the gate that answered");
        }
    }

    @Test
    void aSecretHasSixteenToFourKibibytesAndAFreshOneIsRandom(@TempDir Path dir) throws Exception {
        DeploymentSecret.of(new byte[DeploymentSecret.MIN_BYTES]);
        DeploymentSecret.of(new byte[4096]);
        IllegalArgumentException shortOne = assertThrows(IllegalArgumentException.class,
                () -> DeploymentSecret.of(new byte[DeploymentSecret.MIN_BYTES - 1]));
        assertTrue(shortOne.getMessage().contains("16 to 4096 bytes, this one 15"), shortOne.getMessage());
        assertThrows(IllegalArgumentException.class, () -> DeploymentSecret.of(new byte[4097]));

        Path file = dir.resolve("exactly");
        Files.createFile(file, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
        byte[] longest = new byte[4096];
        Arrays.fill(longest, (byte) 'x');
        Files.write(file, longest);
        Files.write(file, "\r\n".getBytes(StandardCharsets.US_ASCII), java.nio.file.StandardOpenOption.APPEND);
        assertEquals(DeploymentSecret.of(longest).bearerToken(), DeploymentSecret.fromFile(file).bearerToken(),
                "4096 bytes and a line end: the largest file taken");
        Files.write(file, "\n".getBytes(StandardCharsets.US_ASCII), java.nio.file.StandardOpenOption.APPEND);
        assertThrows(IllegalArgumentException.class, () -> DeploymentSecret.fromFile(file), "one byte more");

        DeploymentSecret a = DeploymentSecret.createFile(dir.resolve("a"));
        DeploymentSecret b = DeploymentSecret.createFile(dir.resolve("b"));
        assertTrue(!a.bearerToken().equals(b.bearerToken()), "two fresh secrets differ");
        assertTrue(a.toString().startsWith("DeploymentSecret[client key ") && !a.toString().contains(a.bearerToken()),
                a.toString());
    }
}
