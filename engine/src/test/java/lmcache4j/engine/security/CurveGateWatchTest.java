package lmcache4j.engine.security;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;
import java.util.function.LongSupplier;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.zmq.OwnedZContext;
import lmcache4j.engine.zmq.Stranger;

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
        RecordingLogger log = new RecordingLogger();
        try (ZContext server = new OwnedZContext("test-watch-server", 1);
             CurveGate gate = CurveGate.open(server, SECRET, "test", host -> { }, log, server::createPoller);
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
            List<String> warnings = log.at(System.Logger.Level.WARNING);
            assertEquals(1, warnings.size(), "one warning for the three, at most one a minute: " + warnings);
            // The address is read at the accept, on the I/O thread, even if JeroMQ has closed the channel since.
            assertTrue(warnings.get(0).matches("refused a connection from 127\\.0\\.0\\.1:\\d+ .*"),
                    "the first stranger's address: " + warnings);
            assertTrue(warnings.get(0).contains(" to the test's PULL socket: it does not speak CURVE"), warnings.get(0));
        }
    }

    /**
     * A stranger whose channel JeroMQ has closed (its NULL greeting refused) before the gate's thread
     * reads the accept event is still named by its address and port: the address is read on the I/O
     * thread as it accepts. The gate's poller here reports nothing until the stranger has seen its
     * connection closed, which is what a busy gate thread does by chance.
     */
    @Test
    void aStrangerClosedBeforeTheGateReadsItsAcceptIsNamedByItsAddress() throws Exception {
        RecordingLogger log = new RecordingLogger();
        AtomicBoolean drain = new AtomicBoolean();
        try (ZContext server = new OwnedZContext("test-watch-late", 1)) {
            IntFunction<ZMQ.Poller> heldBack = size -> new ZMQ.Poller(server.getContext(), size) {
                @Override
                public int poll(long timeout) {
                    if (!drain.get()) {
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(timeout));
                        return 0;
                    }
                    return super.poll(timeout);
                }
            };
            try (CurveGate gate = CurveGate.open(server, SECRET, "test", host -> { }, log, heldBack)) {
                ZMQ.Socket pull = server.createSocket(SocketType.PULL);
                SECRET.serve(pull);
                gate.watch(pull, "the test's PULL socket");
                int port = pull.bindToRandomPort("tcp://127.0.0.1");
                try (Stranger stranger = Stranger.greetAndDeclare("127.0.0.1", port, "NULL", 0)) {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while (!stranger.closedByServer()) {
                        assertTrue(System.nanoTime() < deadline, "JeroMQ closes a NULL greeting to a CURVE socket");
                    }
                    drain.set(true);
                    awaitAtLeast(1, gate::refused, "the stranger is refused once its events are drained");
                    List<String> warnings = log.at(System.Logger.Level.WARNING);
                    assertEquals(1, warnings.size(), warnings.toString());
                    assertTrue(warnings.get(0).startsWith("refused a connection from 127.0.0.1:" + stranger.localPort()
                            + " to the test's PULL socket"), "the closed stranger's address and port: " + warnings);
                }
            }
        }
    }

    @Test
    void anAcceptCarriesItsPeersAddressAndOtherEventsPassUnchanged() throws IOException {
        zmq.ZMQ.Event closed = new zmq.ZMQ.Event(ZMQ.EVENT_DISCONNECTED, "tcp://127.0.0.1:1", null);
        assertSame(closed, CurveGate.withPeer(closed), "only an accept is rewritten");
        try (ServerSocketChannel listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             SocketChannel client = SocketChannel.open(listener.getLocalAddress());
             SocketChannel accepted = listener.accept()) {
            zmq.ZMQ.Event event = CurveGate.withPeer(new zmq.ZMQ.Event(ZMQ.EVENT_ACCEPTED, "tcp://127.0.0.1:2", accepted));
            assertEquals(ZMQ.EVENT_ACCEPTED, event.event);
            assertSame(accepted, event.arg, "the channel stays the event's value");
            assertEquals("127.0.0.1:" + ((InetSocketAddress) client.getLocalAddress()).getPort(), event.addr);
        }
    }

    @Test
    void aPeersAddressIsItsRemoteAddressOrElseAPeer() throws IOException {
        assertEquals("a peer", CurveGate.peer(null), "no channel in the event");
        assertEquals("a peer", CurveGate.peer("not a channel"));
        try (ServerSocketChannel listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             SocketChannel unconnected = SocketChannel.open();
             SocketChannel client = SocketChannel.open(listener.getLocalAddress());
             SocketChannel accepted = listener.accept()) {
            assertEquals("a peer", CurveGate.peer(unconnected), "not connected: no remote address");
            InetSocketAddress remote = (InetSocketAddress) client.getLocalAddress();
            assertEquals("127.0.0.1:" + remote.getPort(), CurveGate.peer(accepted), "host and port, no leading slash");
            accepted.close();
            assertEquals("a peer", CurveGate.peer(accepted), "closed meanwhile");
        }
    }

    /**
     * The gate thread's own handles: each poller it makes is closed when it makes the next (a watch
     * added while it runs) and when it stops, and closing the gate closes every socket it made in the
     * context (its ZAP socket, each watch's two ends), whether its thread took the watch up or not.
     */
    @Test
    void theGateClosesEveryPollerAndSocketItMade() throws InterruptedException {
        List<Boolean> pollersClosed = new CopyOnWriteArrayList<>();
        try (ZContext server = new OwnedZContext("test-watch-handles", 1);
             ZContext peers = new OwnedZContext("test-watch-handles-peers", 1)) {
            IntFunction<ZMQ.Poller> pollers = size -> {
                int index = pollersClosed.size();
                pollersClosed.add(false);
                return new ZMQ.Poller(server.getContext(), size) {
                    @Override
                    public void close() {
                        pollersClosed.set(index, true);
                        super.close();
                    }
                };
            };
            CurveGate gate = CurveGate.open(server, SECRET, "test", host -> { }, new RecordingLogger(), pollers);
            awaitAtLeast(1, pollersClosed::size, "the gate thread makes its first poller");
            ZMQ.Socket first = server.createSocket(SocketType.PULL);
            ZMQ.Socket second = server.createSocket(SocketType.PULL);
            SECRET.serve(first);
            SECRET.serve(second);
            gate.watch(first, "the first");
            gate.watch(second, "the second"); // watched from a poller made after the first: two watches in it
            second.bindToRandomPort("tcp://127.0.0.1");
            ZMQ.Socket plain = peers.createSocket(SocketType.PUSH);
            plain.setLinger(0);
            plain.setReconnectIVL(-1);
            plain.connect(second.getLastEndpoint());
            plain.send("from a stranger");
            awaitAtLeast(1, gate::refused, "a watch added while the gate runs is heard");
            assertTrue(pollersClosed.size() >= 2, "a poller made for the new watches: " + pollersClosed);
            assertTrue(pollersClosed.subList(0, pollersClosed.size() - 1).stream().allMatch(c -> c),
                    "each poller is closed when the next is made: " + pollersClosed);
            assertEquals(false, pollersClosed.get(pollersClosed.size() - 1), "the one in use is open");

            gate.watcher("a watch the gate thread may not have taken up");
            gate.close();
            assertTrue(pollersClosed.stream().allMatch(c -> c), "the gate closed its last poller: " + pollersClosed);
            assertEquals(Set.of(first, second), Set.copyOf(server.getSockets()), "only the test's own sockets are left");
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
