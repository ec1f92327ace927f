package lmcache4j.server.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.controller.message.WorkerReqRetMsg;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.zmq.OwnedZContext;
import lmcache4j.server.controller.registry.WorkerKey;

/**
 * A controller of a deployment with a secret admits only the deployment's client key. The outsider
 * here knows the right server key (a server's public key is no secret: it leaks from any client's
 * configuration) and completes its half of CURVE with a key pair of its own: the controller's ZAP
 * handler must refuse that key, so its RegisterMsg goes unheard. A member, on the same controller,
 * is answered: the refusal is the client key's, not a broken setup.
 */
@Timeout(60)
class ControllerCurveGateTest {
    private static final Duration SILENCE = Duration.ofSeconds(2);

    @Test
    void theRightServerKeyWithAForeignClientKeyRegistersNothing(@TempDir Path dir) throws Exception {
        DeploymentSecret secret = DeploymentSecret.createFile(dir.resolve("secret"));
        try (ControllerServer controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts()
                     .withSecretFile(Optional.of(dir.resolve("secret"))));
             ZContext context = new OwnedZContext("test-controller-curve-gate", 1)) {
            String reply = controller.replyEndpoint().connectAddress();
            ZMQ.Socket probe = context.createSocket(SocketType.DEALER);
            secret.connectAsMember(probe);
            byte[] serverKey = probe.getCurveServerKey(); // what any member's configuration shows
            context.destroySocket(probe);

            ZMQ.Curve.KeyPair own = ZMQ.Curve.generateKeyPair();
            ZMQ.Socket outsider = dealer(context);
            outsider.setCurveServerKey(serverKey);
            outsider.setCurvePublicKey(ZMQ.Curve.z85Decode(own.publicKey));
            outsider.setCurveSecretKey(ZMQ.Curve.z85Decode(own.secretKey));
            outsider.connect(reply);
            outsider.sendMore(new byte[0]);
            outsider.send(ControllerCodec.encode(new WorkerReqMsg.RegisterMsg("intruder", 0, "127.0.0.1", 1, Optional.empty())), 0);
            assertNull(outsider.recv(0), "no answer to a RegisterMsg over a foreign client key");
            assertFalse(controller.registry().isRegistered(new WorkerKey("intruder", 0)));
            assertTrue(controller.metrics().render().lines()
                    .anyMatch(l -> l.matches("lmcache4j_controller_curve_handshakes_refused_total [1-9].*")),
                    "the gate counted the refusal");

            ZMQ.Socket member = dealer(context);
            secret.connectAsMember(member);
            member.connect(reply);
            member.setReceiveTimeOut(30_000);
            member.sendMore(new byte[0]);
            member.send(ControllerCodec.encode(new WorkerReqMsg.RegisterMsg("member", 0, "127.0.0.1", 2, Optional.empty())), 0);
            assertEquals(0, member.recv(0).length, "[empty, payload]");
            assertInstanceOf(WorkerReqRetMsg.RegisterRetMsg.class, ControllerCodec.decode(member.recv(0)));
            assertTrue(controller.registry().isRegistered(new WorkerKey("member", 0)));
        }
    }

    private static ZMQ.Socket dealer(ZContext context) {
        ZMQ.Socket s = context.createSocket(SocketType.DEALER);
        s.setLinger(0);
        s.setReceiveTimeOut((int) SILENCE.toMillis());
        s.setSendTimeOut((int) SILENCE.toMillis()); // a send must not wait on a handshake that never completes
        return s;
    }
}
