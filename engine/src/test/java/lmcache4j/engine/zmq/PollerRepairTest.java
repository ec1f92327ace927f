package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Connects made by an {@link OwnedZContext} do not stall in JeroMQ 0.6.0's lost poller
 * registration ({@link PollerRepair}): hundreds of PUSH sockets connect, each followed at once by a
 * burst of sends (which keeps the I/O thread's mailbox busy while the connect completes: that is
 * when a registration is lost), with JeroMQ's default 30 s handshake timer. Without the repair about
 * one connect in a hundred delivers nothing until that timer fires. The client's context has no
 * other traffic: any other connection's activity on the same I/O thread would heal the lost
 * registration as a side effect, and hide it.
 */
class PollerRepairTest {
    private static final int CONNECTS = 800;
    private static final int BURST = 2_000;
    /** Far above a loopback handshake under load (milliseconds), far below the handshake timer's 30 s. */
    private static final int FIRST_MESSAGE_MILLIS = 3_000;

    @Test
    void everyConnectDeliversItsBurstWithoutWaitingForTheHandshakeTimer() {
        try (ZContext server = new OwnedZContext("test-repair-server", 1);
                ZContext client = new OwnedZContext("test-repair-client", 1)) {
            ZMQ.Socket pull = server.createSocket(SocketType.PULL);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            pull.setReceiveTimeOut(FIRST_MESSAGE_MILLIS);
            byte[] payload = new byte[16];
            for (int attempt = 0; attempt < CONNECTS; attempt++) {
                ZMQ.Socket push = client.createSocket(SocketType.PUSH);
                push.setLinger(0);
                push.setSndHWM(BURST * 2);
                push.connect("tcp://127.0.0.1:" + port);
                for (int i = 0; i < BURST; i++) {
                    push.send(payload, 0);
                }
                assertNotNull(pull.recv(0), "connect " + attempt + " of " + CONNECTS + " delivered nothing in "
                        + FIRST_MESSAGE_MILLIS + " ms: its registration was lost (JeroMQ's poller)");
                for (int i = 1; i < BURST; i++) {
                    assertNotNull(pull.recv(0), "connect " + attempt + ": message " + i + " of the burst is missing");
                }
                client.destroySocket(push);
            }
        }
    }

    @Test
    void theTickIsShortAfterAChangeAndGrowsWithTheHandles() {
        assertEquals(PollerRepair.ACTIVE_TICK_MILLIS, PollerRepair.tickMillis(0, true));
        assertEquals(PollerRepair.IDLE_TICK_MILLIS, PollerRepair.tickMillis(0, false));
        assertEquals(PollerRepair.ACTIVE_TICK_MILLIS, PollerRepair.tickMillis(2_000, true));
        assertEquals(160, PollerRepair.tickMillis(16_000, true));
        assertEquals(PollerRepair.IDLE_TICK_MILLIS, PollerRepair.tickMillis(16_000, false));
    }
}
