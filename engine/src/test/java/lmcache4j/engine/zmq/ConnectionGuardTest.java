package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.security.CurveGate;
import lmcache4j.engine.security.DeploymentSecret;

/**
 * {@link ConnectionGuard} against strangers speaking raw ZMTP to a guarded JeroMQ socket: those past
 * the limit of connections in their handshake are closed at once; those that greeted and declared
 * a message JeroMQ then waits for (or never greeted) are closed at the handshake timeout; a member
 * that completed the CURVE handshake (admitted by the gate) or delivered a first message (plain)
 * is established and kept; the limits in all and per host refuse established connections too.
 */
class ConnectionGuardTest {
    /** Long enough for a CURVE handshake on a loaded machine (the first one loads and compiles its crypto). */
    private static final Duration TIMEOUT = Duration.ofMillis(1_500);
    private static final DeploymentSecret SECRET = DeploymentSecret.of(
            "connection guard test secret, 32".getBytes(StandardCharsets.US_ASCII));

    @Test
    void strangersPastTheHandshakeLimitAreRefusedAndTheRestTimedOutGreetedOrNot() throws Exception {
        // Long enough to read every stranger's connection (100 ms each) before the timeout ends the rest.
        ConnectionGuard guard = new ConnectionGuard("test", new ConnectionLimits(64, 64, 4, Duration.ofSeconds(3)));
        try (OwnedZContext context = new OwnedZContext("test-guard", 1)) {
            ZMQ.Socket pull = guard.watch(context, context.createSocket(SocketType.PULL));
            new ReceiveBudget(1 << 20, Optional.of(guard)).apply(pull, 1 << 20);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            List<Stranger> strangers = new ArrayList<>();
            try {
                strangers.add(Stranger.connect("127.0.0.1", port)); // never greets
                for (int i = 0; i < 9; i++) {
                    strangers.add(Stranger.greetAndDeclare("127.0.0.1", port, "NULL", Stranger.UNCOUNTED_DECLARED));
                }
                await(() -> guard.counts().refusedHandshaking() == 6, "six of ten refused: " + guard.counts());
                assertEquals(4, guard.counts().handshaking(), guard.counts().toString());
                long refusedClosed = 0;
                for (Stranger s : strangers) {
                    refusedClosed += s.closedByServer() ? 1 : 0;
                }
                assertEquals(6, refusedClosed, "the refused connections are closed at once, the others not yet");
                await(() -> guard.counts().timedOut() == 4, "the four are timed out: " + guard.counts());
                for (Stranger s : strangers) {
                    await(() -> closed(s), "every stranger's connection is closed");
                }
                await(() -> guard.counts().open() == 0 && guard.counts().handshaking() == 0, "forgotten: " + guard.counts());
                assertEquals(0, guard.unprovenEntries(), "the timed-out connections left the unproven lists");
                assertEquals(4, guard.counts().timedOut(), "each connection timed out once, not again while it closed");
            } finally {
                for (Stranger s : strangers) {
                    s.close();
                }
            }
        }
    }

    @Test
    void aMemberThatCompletesItsHandshakeIsKeptPastTheTimeoutWithCurve() throws Exception {
        ConnectionGuard guard = new ConnectionGuard("test", new ConnectionLimits(64, 64, 4, TIMEOUT));
        try (OwnedZContext context = new OwnedZContext("test-guard-curve", 1);
                CurveGate gate = CurveGate.open(context, SECRET, "test-guard", guard::admitted);
                ZContext clients = new OwnedZContext("test-guard-member", 1)) {
            ZMQ.Socket pull = context.createSocket(SocketType.PULL);
            SECRET.serve(pull);
            guard.watch(context, pull);
            new ReceiveBudget(1 << 20).apply(pull, 1 << 20);
            pull.setReceiveTimeOut(5_000);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            try (Stranger stranger = Stranger.greetAndDeclare("127.0.0.1", port, "CURVE", Stranger.UNCOUNTED_DECLARED)) {
                ZMQ.Socket member = clients.createSocket(SocketType.PUSH);
                member.setLinger(0);
                SECRET.connectAsMember(member);
                member.connect("tcp://127.0.0.1:" + port);
                member.send("first");
                assertEquals("first", pull.recvStr());
                await(() -> guard.counts().timedOut() >= 1 && closed(stranger), "the stranger is timed out: " + guard.counts());
                Thread.sleep(2 * TIMEOUT.toMillis());
                member.send("later");
                assertEquals("later", pull.recvStr(), "the member's connection outlived the timeout");
                assertEquals(1, guard.counts().established(), guard.counts().toString());
                assertEquals(1, guard.counts().open(), guard.counts().toString());
                assertEquals(0, guard.counts().handshaking(), guard.counts().toString());
                assertEquals(0, guard.unprovenEntries(), "the member proven, the stranger gone: no address left listed");
            }
        }
    }

    @Test
    void aPlainConnectionIsProvenByItsFirstMessageAndAnIdleOneIsTimedOut() throws Exception {
        ConnectionGuard guard = new ConnectionGuard("test", new ConnectionLimits(64, 64, 4, TIMEOUT));
        try (OwnedZContext context = new OwnedZContext("test-guard-plain", 1);
                ZContext clients = new OwnedZContext("test-guard-plain-clients", 1)) {
            ZMQ.Socket pull = guard.watch(context, context.createSocket(SocketType.PULL));
            new ReceiveBudget(1 << 20, Optional.of(guard)).apply(pull, 1 << 20);
            pull.setReceiveTimeOut(5_000);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            ZMQ.Socket talker = clients.createSocket(SocketType.PUSH);
            talker.setLinger(0);
            talker.connect("tcp://127.0.0.1:" + port);
            talker.send("first");
            assertEquals("first", pull.recvStr());
            await(() -> guard.counts().established() == 1, "the talker is established: " + guard.counts());
            ZMQ.Socket idle = clients.createSocket(SocketType.PUSH); // completes the handshake, sends nothing
            idle.setLinger(0);
            idle.connect("tcp://127.0.0.1:" + port);
            await(() -> guard.counts().timedOut() >= 1, "the idle connection is timed out: " + guard.counts());
            // JeroMQ connects again (a message sent while the old connection was being cut would be lost with it)
            await(() -> guard.counts().open() == 2 && guard.counts().handshaking() == 1, "reconnected: " + guard.counts());
            idle.send("after its reconnect"); // a first message proves the new connection
            assertEquals("after its reconnect", pull.recvStr());
            Thread.sleep(2 * TIMEOUT.toMillis());
            talker.send("still there");
            assertEquals("still there", pull.recvStr(), "the proven connection outlived the timeout");
            assertEquals(2, guard.counts().established(), guard.counts().toString());
            assertEquals(0, guard.unprovenEntries(), "proven and timed-out connections left the unproven list");
        }
    }

    @Test
    void anAddressStaysListedWhileOneOfItsConnectionsIsUnprovenAndLeavesWithTheLast() throws Exception {
        ConnectionGuard guard = new ConnectionGuard("test", new ConnectionLimits(64, 64, 8, Duration.ofSeconds(30)));
        try (OwnedZContext context = new OwnedZContext("test-guard-listed", 1)) {
            ZMQ.Socket pull = context.createSocket(SocketType.PULL);
            SECRET.serve(pull);
            guard.watch(context, pull);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            try (Stranger first = Stranger.connect("127.0.0.1", port); Stranger second = Stranger.connect("127.0.0.1", port)) {
                await(() -> guard.counts().handshaking() == 2, "two in their handshake: " + guard.counts());
                assertEquals(3, guard.unprovenEntries(), "one address, two connections");
                first.close();
                await(() -> guard.counts().open() == 1, "the first forgotten: " + guard.counts());
                assertEquals(2, guard.unprovenEntries(), "the address stays listed with the second connection");
                second.close();
                await(() -> guard.counts().open() == 0, "the second forgotten: " + guard.counts());
                assertEquals(0, guard.unprovenEntries(), "the address leaves with its last connection");
            }
        }
    }

    @Test
    void aClosedConnectionGivesBackItsPlaceInAllAndPerHost() throws Exception {
        ConnectionGuard guard = new ConnectionGuard("test", new ConnectionLimits(8, 2, 2, Duration.ofSeconds(30)));
        try (OwnedZContext context = new OwnedZContext("test-guard-close", 1);
                ZContext clients = new OwnedZContext("test-guard-close-clients", 1)) {
            ZMQ.Socket pull = guard.watch(context, context.createSocket(SocketType.PULL));
            new ReceiveBudget(1 << 20, Optional.of(guard)).apply(pull, 1 << 20);
            pull.setReceiveTimeOut(5_000);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            List<ZMQ.Socket> pushes = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                while (pushes.size() < 2) {
                    ZMQ.Socket push = clients.createSocket(SocketType.PUSH);
                    push.setLinger(0);
                    push.connect("tcp://127.0.0.1:" + port);
                    push.send("round " + round);
                    assertEquals("round " + round, pull.recvStr(), "a connection within the per-host limit again");
                    pushes.add(push);
                }
                await(() -> guard.counts().open() == 2 && guard.counts().handshaking() == 0, "two established: " + guard.counts());
                pushes.removeFirst().close(); // its place per host comes back
                await(() -> guard.counts().open() == 1, "the closed connection forgotten: " + guard.counts());
            }
            assertEquals(0, guard.counts().refused(), guard.counts().toString());
            assertEquals(4, guard.counts().established(), guard.counts().toString());
            // One open: a second fits the per-host limit again, a third does not (the count went down by one, not to nothing).
            ZMQ.Socket push = clients.createSocket(SocketType.PUSH);
            push.setLinger(0);
            push.connect("tcp://127.0.0.1:" + port);
            push.send("second");
            assertEquals("second", pull.recvStr());
            try (Stranger third = Stranger.connect("127.0.0.1", port)) {
                await(() -> closed(third), "a third connection from the address is refused");
            }
            assertEquals(1, guard.counts().refusedPerHost(), guard.counts().toString());
        }
    }

    @Test
    void aRefusalWarnsOnceAThousandNamingTheAddressAndTheCount() throws Exception {
        Logger log = Logger.getLogger(ConnectionGuard.class.getName());
        List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel() == java.util.logging.Level.WARNING) {
                    warnings.add(record.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(handler);
        ConnectionGuard guard = new ConnectionGuard("warned", new ConnectionLimits(64, 64, 1, Duration.ofSeconds(30)));
        List<Stranger> strangers = new ArrayList<>();
        try (OwnedZContext context = new OwnedZContext("test-guard-warn", 1)) {
            ZMQ.Socket pull = guard.watch(context, context.createSocket(SocketType.PULL));
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            strangers.add(Stranger.connect("127.0.0.1", port)); // holds the one place in the handshake
            await(() -> guard.counts().handshaking() == 1, "one handshaking: " + guard.counts());
            for (int i = 0; i < 3; i++) {
                strangers.add(Stranger.connect("127.0.0.1", port));
            }
            await(() -> guard.counts().refusedHandshaking() == 3, "three refused: " + guard.counts());
            assertEquals(List.of("warned: refused a connection from 127.0.0.1 at the limit of connections in their handshake (1);"
                    + " 1 refused so far"), warnings, "the first refusal warns, the next 999 do not");
        } finally {
            log.removeHandler(handler);
            for (Stranger s : strangers) {
                s.close();
            }
        }
    }

    @Test
    void theFirstRefusalAtEachLimitWarnsNamingThatLimit() throws Exception {
        assertEquals("warned: refused a connection from 127.0.0.1 at the limit of connections from one address (1);"
                + " 1 refused so far", firstWarning(new ConnectionLimits(64, 1, 64, Duration.ofSeconds(30))));
        assertEquals("warned: refused a connection from 127.0.0.1 at the limit of connections (1); 1 refused so far",
                firstWarning(new ConnectionLimits(1, 1, 1, Duration.ofSeconds(30))));
    }

    /** The warning of the one refusal of a second stranger while a first holds the only place {@code limits} give. */
    private static String firstWarning(ConnectionLimits limits) throws Exception {
        Logger log = Logger.getLogger(ConnectionGuard.class.getName());
        List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel() == java.util.logging.Level.WARNING) {
                    warnings.add(record.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(handler);
        ConnectionGuard guard = new ConnectionGuard("warned", limits);
        try (OwnedZContext context = new OwnedZContext("test-guard-first-warning", 1);
                Stranger first = connectTo(guard, context);
                Stranger second = Stranger.connect("127.0.0.1", first.serverPort())) {
            await(() -> guard.counts().refused() == 1, "the second refused: " + guard.counts());
            assertEquals(1, warnings.size(), warnings.toString());
            return warnings.get(0);
        } finally {
            log.removeHandler(handler);
        }
    }

    private static Stranger connectTo(ConnectionGuard guard, OwnedZContext context) throws Exception {
        ZMQ.Socket pull = guard.watch(context, context.createSocket(SocketType.PULL));
        Stranger first = Stranger.connect("127.0.0.1", pull.bindToRandomPort("tcp://127.0.0.1"));
        await(() -> guard.counts().open() == 1, "the first taken: " + guard.counts());
        return first;
    }

    /**
     * The other watcher (a CURVE gate's) is handed only the events it asked for, and never the accept
     * of a connection the guard refused: it would count a connection that never was.
     */
    @Test
    void theOtherWatcherSeesOnlyItsEventsAndNoRefusedAccept() throws Exception {
        ConnectionGuard guard = new ConnectionGuard("test", new ConnectionLimits(64, 64, 1, Duration.ofSeconds(30)));
        List<Integer> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (OwnedZContext context = new OwnedZContext("test-guard-also", 1)) {
            ZMQ.Socket pull = guard.watch(context, context.createSocket(SocketType.PULL), e -> seen.add(e.event),
                    ZMQ.EVENT_ACCEPTED);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            try (Stranger first = Stranger.connect("127.0.0.1", port)) {
                await(() -> guard.counts().handshaking() == 1, "the first taken: " + guard.counts());
                for (int i = 0; i < 2; i++) {
                    try (Stranger refused = Stranger.connect("127.0.0.1", port)) {
                        await(() -> closed(refused), "past the handshake limit: refused");
                    }
                }
            }
            await(() -> guard.counts().open() == 0, "the first's disconnect seen: " + guard.counts());
            assertEquals(2, guard.counts().refusedHandshaking(), guard.counts().toString());
            assertEquals(List.of(ZMQ.EVENT_ACCEPTED), seen, "one accept (the taken one), no disconnect (not asked for)");
        }
    }

    /** A watched socket closed while connections are in their handshake: JeroMQ says nothing, the next ticks forget them. */
    @Test
    void connectionsOfAClosedSocketAreForgottenWithoutADisconnectEvent() throws Exception {
        ConnectionGuard guard = new ConnectionGuard("test", new ConnectionLimits(64, 64, 4, Duration.ofSeconds(30)));
        try (OwnedZContext context = new OwnedZContext("test-guard-closed-socket", 1)) {
            ZMQ.Socket pull = guard.watch(context, context.createSocket(SocketType.PULL));
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            try (Stranger a = Stranger.connect("127.0.0.1", port); Stranger b = Stranger.connect("127.0.0.1", port)) {
                await(() -> guard.counts().handshaking() == 2, "two in their handshake: " + guard.counts());
                context.destroySocket(pull);
                await(() -> guard.counts().open() == 0 && guard.counts().handshaking() == 0, "forgotten: " + guard.counts());
                assertEquals(0, guard.counts().timedOut(), "forgotten, not timed out: " + guard.counts());
                assertEquals(0, guard.unprovenEntries());
            }
        }
    }

    @Test
    void countsAddEveryKindOfRefusalAndTheGuardKeepsItsLimits() {
        assertEquals(7, new ConnectionGuard.Counts(0, 0, 0, 1, 2, 4, 0).refused());
        ConnectionLimits limits = new ConnectionLimits(8, 4, 2, TIMEOUT);
        assertEquals(limits, new ConnectionGuard("test", limits).limits());
    }

    @Test
    void establishedConnectionsCountAgainstTheLimitsInAllAndPerHost() throws Exception {
        ConnectionGuard all = new ConnectionGuard("test", new ConnectionLimits(2, 2, 2, Duration.ofSeconds(30)));
        ConnectionGuard perHost = new ConnectionGuard("test", new ConnectionLimits(8, 2, 2, Duration.ofSeconds(30)));
        for (ConnectionGuard guard : List.of(all, perHost)) {
            try (OwnedZContext context = new OwnedZContext("test-guard-limits", 1);
                    ZContext clients = new OwnedZContext("test-guard-clients", 1)) {
                ZMQ.Socket pull = guard.watch(context, context.createSocket(SocketType.PULL));
                new ReceiveBudget(1 << 20, Optional.of(guard)).apply(pull, 1 << 20);
                pull.setReceiveTimeOut(5_000);
                int port = pull.bindToRandomPort("tcp://127.0.0.1");
                for (int i = 0; i < 2; i++) {
                    ZMQ.Socket push = clients.createSocket(SocketType.PUSH);
                    push.setLinger(0);
                    push.connect("tcp://127.0.0.1:" + port);
                    push.send("hello");
                    assertNotNull(pull.recv());
                }
                await(() -> guard.counts().established() == 2, "two established: " + guard.counts());
                try (Stranger third = Stranger.connect("127.0.0.1", port)) {
                    await(() -> closed(third), "a third connection is refused");
                }
                assertEquals(1, guard.counts().refused(), guard.counts().toString());
                assertEquals(guard == all ? 1 : 0, guard.counts().refusedTotal(), guard.counts().toString());
                assertEquals(guard == perHost ? 1 : 0, guard.counts().refusedPerHost(), guard.counts().toString());
            }
        }
    }

    @Test
    void limitsThatCannotHoldAreRefusedNamingWhatToFix() {
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
                () -> new ConnectionLimits(0, 1, 1, TIMEOUT));
        assertTrue(zero.getMessage().contains("at least 1"), zero.getMessage());
        IllegalArgumentException handshaking = assertThrows(IllegalArgumentException.class,
                () -> new ConnectionLimits(4, 4, 8, TIMEOUT));
        assertTrue(handshaking.getMessage().contains("cannot exceed"), handshaking.getMessage());
        IllegalArgumentException shortTimeout = assertThrows(IllegalArgumentException.class,
                () -> new ConnectionLimits(4, 4, 4, Duration.ofMillis(1)));
        assertTrue(shortTimeout.getMessage().contains("handshake timeout"), shortTimeout.getMessage());
        ConnectionLimits limits = new ConnectionLimits(8, 8, 4, TIMEOUT);
        assertEquals(4 * ConnectionLimits.HEAP_BYTES_PER_CONNECTION, limits.strangerHeapBytes(true));
        assertEquals(8 * ConnectionLimits.HEAP_BYTES_PER_CONNECTION, limits.strangerHeapBytes(false));
        assertEquals(8 * ConnectionLimits.DIRECT_BYTES_PER_CONNECTION, limits.strangerDirectBytes(false));
        ConnectionLimits forWorkers = ConnectionLimits.forExpected(3 * 4096);
        assertEquals(12_544, forWorkers.maxConnections());
        assertEquals(1_024, forWorkers.maxConnectionsPerHost());
        assertEquals(256, forWorkers.maxHandshaking());
        assertEquals(ConnectionLimits.DEFAULT_HANDSHAKE_TIMEOUT, forWorkers.handshakeTimeout());
    }

    private static boolean closed(Stranger s) {
        try {
            return s.closedByServer();
        } catch (IOException e) {
            return true;
        }
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within 10 s: " + what);
            }
            Thread.sleep(20);
        }
    }
}
