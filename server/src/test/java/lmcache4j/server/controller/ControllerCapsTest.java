package lmcache4j.server.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Optional;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.controller.message.OrchMsg;
import lmcache4j.engine.controller.message.WorkerMsg;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.controller.message.WorkerReqRetMsg;
import lmcache4j.server.controller.http.HttpCalls;

/**
 * Attacks on the controller's caps and on its workers' identities over its real sockets (without a
 * deployment secret, as LMCache's workers need): each is refused, counted, and the controller serves on.
 */
@Timeout(60)
class ControllerCapsTest {
    private ControllerServer controller;

    @AfterEach
    void stop() {
        if (controller != null) {
            controller.close();
        }
    }

    @Test
    void registrationsBeyondMaxWorkersAreRefusedAndCounted() throws Exception {
        controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts()
                .withCaps(new ControllerConfig.Caps(1 << 20, 3, 4)));
        try (FakeWorker attacker = new FakeWorker(controller, "flood", 0)) {
            int accepted = 0;
            for (int i = 0; i < 40; i++) {
                ControllerMessage reply = attacker.ask(attacker.dealer,
                        new WorkerReqMsg.RegisterMsg("flood-" + i, 0, "127.0.0.1", 1, Optional.empty()));
                if (reply instanceof WorkerReqRetMsg.RegisterRetMsg) {
                    accepted++;
                } else {
                    assertTrue(((ErrorMsg) reply).error().contains("maximum of 3 workers"), reply.toString());
                }
            }
            assertEquals(3, accepted);
            assertEquals(3, controller.registry().workers().size());
            assertEquals(37, controller.metrics().value("lmcache4j_controller_refused_total{what=\"workers\"}"));
            ControllerMessage beat = attacker.ask(attacker.heartbeatDealer,
                    new WorkerReqMsg.HeartbeatMsg("flood-99", 0, "127.0.0.1", 1, Optional.empty()));
            assertInstanceOf(ErrorMsg.class, beat, "a heartbeat cannot register a worker past the cap either");
            assertTrue(HttpCalls.get(http(), "/metrics").body().contains("lmcache4j_controller_refused_total{what=\"workers\"} 38"));
        }
    }

    @Test
    void orchestrationMessagesBeyondTheQueueAreDroppedAndCounted() throws Exception {
        controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts()
                .withTimeouts(Duration.ofSeconds(60), Duration.ofSeconds(1))
                .withCaps(new ControllerConfig.Caps(1 << 20, 16, 2)));
        // A registered worker that accepts TCP and never answers: each pin waits the request timeout.
        try (ServerSocket mute = new ServerSocket(0, 4, InetAddress.getLoopbackAddress());
             FakeWorker attacker = new FakeWorker(controller, "slow", 0)) {
            assertInstanceOf(WorkerReqRetMsg.RegisterRetMsg.class, attacker.ask(attacker.dealer,
                    new WorkerReqMsg.RegisterMsg("slow", 1, "127.0.0.1", mute.getLocalPort(), Optional.empty())));
            int[] tokens = new int[1 << 20]; // 4 MiB of tokens each: 30 queued would be 120 MiB
            for (int i = 0; i < 30; i++) {
                attacker.push.send(ControllerCodec.encode(new OrchMsg.PinMsg("p" + i, "slow", "LocalCPUBackend", tokens)), 0);
            }
            String refused = "lmcache4j_controller_refused_total{what=\"orchestrations\"}";
            ControllerSocketTest.await("the flood is refused at the queue", () -> controller.metrics().value(refused) >= 20);
            assertTrue(controller.metrics().value(refused) <= 30 - 2, "the queue's two places are used");
            assertEquals(200, HttpCalls.get(http(), "/metrics").status(), "the controller still answers");
        }
    }

    @Test
    void anotherAddressCannotTakeOverOrRemoveARegisteredWorker() throws Exception {
        controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts());
        try (FakeWorker victim = new FakeWorker(controller, "victim", 0);
             FakeWorker attacker = new FakeWorker(controller, "attacker", 0)) {
            victim.register();
            victim.push(victim.admits("LocalCPUBackend", 1, 2, 3));
            ControllerSocketTest.await("the victim's entries", () -> controller.index().entries() == 3);

            ControllerMessage takeover = attacker.ask(attacker.dealer, new WorkerReqMsg.RegisterMsg("victim", 0, "127.0.0.1",
                    attacker.repPort, Optional.of("tcp://127.0.0.1:6666")));
            assertTrue(((ErrorMsg) takeover).error().contains("registered at another address"), takeover.toString());
            attacker.push(new WorkerMsg.DeRegisterMsg("victim", 0, "127.0.0.1", attacker.repPort));
            String refused = "lmcache4j_controller_refused_total{what=\"identity\"}";
            ControllerSocketTest.await("both attempts refused", () -> controller.metrics().value(refused) == 2);

            assertEquals(3, controller.index().entries(), "the victim's entries are intact");
            assertEquals(victim.repPort, controller.registry().workersOf("victim").getFirst().port(),
                    "its control address is its own");
        }
    }

    private InetSocketAddress http() {
        Endpoint e = controller.httpEndpoint();
        return new InetSocketAddress(e.host(), e.port());
    }
}
