package lmcache4j.server.controller;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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

/**
 * Issue #24's "~10 KB kills the controller's ZeroMQ side": many connections that each declare a
 * large frame and send nothing more. JeroMQ reserves a frame's declared size when its header
 * arrives, before a CURVE handshake too, so the
 * controller's sockets reserve from one receive budget of (queued orchestrations + 2) frames, what
 * the launcher's heap sizing sets aside. Past it, reservations are refused and counted, the memory
 * held stays within the budget, and a member still registers.
 */
@Timeout(120)
class DeclaredFrameFloodTest {
    private static final int FRAME = 8 << 20;
    private static final int CONNECTIONS = 40; // 40 × 7 MiB declared: 280 MiB against a 32 MiB budget

    @Test
    void aSecuredControllerHoldsItsBudgetAndAMemberStillRegisters(@TempDir Path dir) throws Exception {
        DeploymentSecret secret = DeploymentSecret.createFile(dir.resolve("secret"));
        try (ControllerServer controller = ControllerServer.start(config().withSecretFile(Optional.of(dir.resolve("secret"))));
             ZContext member = new OwnedZContext("test-declared-frame-flood", 1)) {
            flood(controller, "CURVE");
            ZMQ.Socket dealer = member.createSocket(SocketType.DEALER);
            secret.connectAsMember(dealer);
            dealer.setLinger(0);
            dealer.setReceiveTimeOut(30_000);
            dealer.connect(controller.replyEndpoint().connectAddress());
            dealer.send(new byte[0], ZMQ.SNDMORE);
            dealer.send(ControllerCodec.encode(new WorkerReqMsg.RegisterMsg("member", 0, "127.0.0.1", 1, Optional.empty())), 0);
            assertNotNull(dealer.recv(0), "the member is answered");
            assertInstanceOf(WorkerReqRetMsg.RegisterRetMsg.class, ControllerCodec.decode(dealer.recv(0)));
        }
    }

    @Test
    void anInsecureControllerHoldsItsBudgetAndAWorkerStillRegisters() throws Exception {
        try (ControllerServer controller = ControllerServer.start(config())) {
            flood(controller, "NULL");
            try (FakeWorker worker = new FakeWorker(controller, "worker", 0)) {
                assertInstanceOf(WorkerReqRetMsg.RegisterRetMsg.class, worker.register());
            }
        }
    }

    private static ControllerConfig config() {
        return ControllerConfig.loopbackAnyPorts().withLimits(1 << 20, 4, FRAME, 0)
                .withCaps(new ControllerConfig.Caps(1 << 20, 16, 2));
    }

    /** Opens the connections, each declaring a 7 MiB frame after the greeting, and checks the budget held. */
    private static void flood(ControllerServer controller, String mechanism) throws Exception {
        long budget = (2 + 2L) * FRAME;
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < CONNECTIONS; i++) {
                Socket raw = new Socket(controller.pullEndpoint().host(), controller.pullEndpoint().port());
                held.add(raw);
                raw.setSoTimeout(10_000);
                OutputStream out = raw.getOutputStream();
                byte[] greeting = new byte[64]; // ZMTP 3.0: signature, version 3.0, mechanism, as-server 0
                greeting[0] = (byte) 0xff;
                greeting[8] = 1;
                greeting[9] = 0x7f;
                greeting[10] = 3;
                byte[] name = mechanism.getBytes(StandardCharsets.US_ASCII);
                System.arraycopy(name, 0, greeting, 12, name.length);
                out.write(greeting);
                out.flush();
                raw.getInputStream().readNBytes(64);
                if (mechanism.equals("NULL")) { // READY as a PUSH, then a message frame
                    ByteArrayOutputStream ready = new ByteArrayOutputStream();
                    ready.write(5);
                    ready.writeBytes("READY".getBytes(StandardCharsets.US_ASCII));
                    ready.write(11);
                    ready.writeBytes("Socket-Type".getBytes(StandardCharsets.US_ASCII));
                    ready.writeBytes(new byte[] {0, 0, 0, 4});
                    ready.writeBytes("PUSH".getBytes(StandardCharsets.US_ASCII));
                    out.write(new byte[] {0x04, (byte) ready.size()});
                    out.write(ready.toByteArray());
                    out.write(ByteBuffer.allocate(9).put((byte) 0x02).putLong(FRAME - (1 << 20)).array());
                } else { // the HELLO command, declared long
                    out.write(ByteBuffer.allocate(9).put((byte) 0x06).putLong(FRAME - (1 << 20)).array());
                }
                out.write(new byte[100]);
                out.flush();
            }
            long deadline = System.nanoTime() + 20_000_000_000L;
            long refused;
            while ((refused = controller.receiveBudget().refused()) == 0
                    && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(refused > 0, "reservations past the budget are refused and counted");
            long heldBytes = controller.receiveBudget().heldBytes();
            assertTrue(heldBytes <= budget, heldBytes + " bytes held against a budget of " + budget);
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
    }
}
