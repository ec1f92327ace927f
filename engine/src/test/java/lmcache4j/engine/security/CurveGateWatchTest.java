package lmcache4j.engine.security;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.zmq.OwnedZContext;

/**
 * The gate's watch of a server socket, in the engine itself (the controller's tests run it through a
 * whole controller): a peer that does not speak CURVE, and a CURVE peer of another deployment, are
 * counted as refused handshakes (the greeting watch and the ZAP handler, each of which a test of the
 * engine module must reach for PIT's engine run to see it); a member is heard and counts nothing.
 */
@Timeout(60)
class CurveGateWatchTest {
    private static final DeploymentSecret SECRET = DeploymentSecret.of("the deployment's secret, 32 bytes".getBytes(
            StandardCharsets.US_ASCII));
    private static final DeploymentSecret OTHER = DeploymentSecret.of("another deployment's secret, 32b".getBytes(
            StandardCharsets.US_ASCII));

    @Test
    void strangersAreCountedAsRefusedAndAMemberIsHeard() throws InterruptedException {
        try (ZContext server = new OwnedZContext("test-watch-server", 1);
             CurveGate gate = CurveGate.open(server, SECRET, "test");
             ZContext peers = new OwnedZContext("test-watch-peers", 1)) {
            ZMQ.Socket pull = server.createSocket(SocketType.PULL);
            SECRET.serve(pull);
            gate.watch(pull, "the test's PULL socket");
            pull.setReceiveTimeOut(200);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            String address = "tcp://127.0.0.1:" + port;

            ZMQ.Socket plain = peers.createSocket(SocketType.PUSH); // NULL mechanism: no secret at all
            plain.setLinger(0);
            plain.setReconnectIVL(-1); // one try: a refused peer that retried would count again
            plain.connect(address);
            plain.send("from a stranger");
            awaitAtLeast(1, gate::refused, "a peer without CURVE is refused in its greeting");

            ZMQ.Socket foreign = peers.createSocket(SocketType.PUSH); // the right server key, another client key
            foreign.setLinger(0);
            foreign.setReconnectIVL(-1); // one try: a refused peer that retried would count again
            OTHER.connectAsMember(foreign);
            foreign.setCurveServerKey(SECRET.serverPublicKey());
            foreign.connect(address);
            foreign.send("from another deployment");
            long afterPlain = gate.refused();
            awaitAtLeast(afterPlain + 1, gate::refused, "a CURVE peer with another client key is refused");

            ZMQ.Socket otherDeployment = peers.createSocket(SocketType.PUSH); // another deployment's server key too
            otherDeployment.setLinger(0);
            otherDeployment.setReconnectIVL(-1); // one try: a refused peer that retried would count again
            OTHER.connectAsMember(otherDeployment);
            otherDeployment.connect(address);
            otherDeployment.send("from another deployment's member");
            long afterForeign = gate.refused();
            awaitAtLeast(afterForeign + 1, gate::refused, "a CURVE peer of another deployment fails its handshake");

            long beforeMember = gate.refused();
            ZMQ.Socket member = peers.createSocket(SocketType.PUSH);
            member.setLinger(0);
            SECRET.connectAsMember(member);
            member.connect(address);
            member.send("from a member");
            List<String> heard = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (heard.isEmpty() && System.nanoTime() < deadline) {
                byte[] m = pull.recv();
                if (m != null) {
                    heard.add(new String(m, StandardCharsets.UTF_8));
                }
            }
            assertEquals(List.of("from a member"), heard, "only the member's message arrives");
            assertNull(pull.recv(), "nothing from the strangers");
            assertEquals(beforeMember, gate.refused(), "a member counts no refusal");
            assertEquals(3, beforeMember, "each stranger refused once");
        }
    }

    @Test
    void theServerKeyAClientNeedsIsTheDeploymentsOwn() {
        try (ZContext context = new OwnedZContext("test-watch-keys", 1)) {
            ZMQ.Socket a = context.createSocket(SocketType.PUSH);
            SECRET.connectAsMember(a);
            assertArrayEquals(SECRET.serverPublicKey(), a.getCurveServerKey());
            assertTrue(SECRET.isMemberKey(a.getCurvePublicKey()));
            ZMQ.Socket b = context.createSocket(SocketType.PUSH);
            OTHER.connectAsMember(b);
            assertTrue(!SECRET.isMemberKey(b.getCurvePublicKey()), "another deployment's client key is not a member");
        }
    }

    private static void awaitAtLeast(long expected, LongSupplier value, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (value.getAsLong() < expected) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + ": " + value.getAsLong() + " refused, expected at least " + expected);
            }
            Thread.sleep(20);
        }
    }
}
