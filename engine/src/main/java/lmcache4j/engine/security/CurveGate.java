package lmcache4j.engine.security;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.IntFunction;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;
import org.zeromq.ZMsg;

import lmcache4j.allocator.internal.threads.OwnedThreads;

/**
 * The ZeroMQ authentication handler (ZAP, RFC 27) of one context: every CURVE handshake on the
 * context's server sockets ({@link DeploymentSecret#serve}) asks it, and it admits only the
 * deployment's client key. Without a handler a CURVE server would admit any key.
 *
 * <p>A peer without the secret never reaches the handler: its NULL greeting is dropped by JeroMQ
 * before any ZAP request. Server sockets {@linkplain #watch watched} through their monitor count
 * and log those too, so the operator of a secured server sees an engine configured without the
 * secret instead of silence.
 */
public final class CurveGate implements AutoCloseable {
    static final String DOMAIN = "lmcache4j";
    private static final System.Logger LOG = System.getLogger(CurveGate.class.getName());
    private static final String ENDPOINT = "inproc://zeromq.zap.01";
    private static final int POLL_MILLIS = 100;
    /** The gate's thread polls every {@value #POLL_MILLIS} ms: it ends well within this. */
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);
    private static final AtomicInteger WATCH_IDS = new AtomicInteger();
    /** The events of a watched socket the gate reads. */
    public static final int WATCHED_EVENTS = ZMQ.EVENT_ACCEPTED | ZMQ.EVENT_HANDSHAKE_PROTOCOL | ZMQ.HANDSHAKE_FAILED_PROTOCOL
            | ZMQ.EVENT_DISCONNECTED;

    private final ZContext context;
    private final DeploymentSecret secret;
    private final ZMQ.Socket socket;
    private final OwnedThreads threads = new OwnedThreads();
    private final LongAdder refused = new LongAdder();
    private final Consumer<String> admitted;
    private final System.Logger log;
    /** Makes the gate thread's pollers: the context's, or in tests one that tells whether each is closed. */
    private final IntFunction<ZMQ.Poller> pollers;
    private final RefusalWarning refusalWarning;
    /** Monitors of watched server sockets, handed to the gate's thread, which owns them from then on. */
    private final ConcurrentLinkedQueue<Watched> newWatches = new ConcurrentLinkedQueue<>();
    /** The sending ends of the watches' monitors, written by the watched sockets' I/O threads; closed last. */
    private final ConcurrentLinkedQueue<ZMQ.Socket> watchSenders = new ConcurrentLinkedQueue<>();
    private volatile boolean running = true;

    /** A watched server socket: its monitor's PAIR socket, what the log calls it, its greetings. */
    private record Watched(ZMQ.Socket monitor, String name, GreetingWatch greetings) {
    }

    private CurveGate(ZContext context, DeploymentSecret secret, String name, Consumer<String> admitted, System.Logger log,
            IntFunction<ZMQ.Poller> pollers) {
        this.context = context;
        this.secret = secret;
        this.admitted = admitted;
        this.log = log;
        this.pollers = pollers;
        this.refusalWarning = new RefusalWarning(log, System::nanoTime);
        this.socket = context.createSocket(SocketType.REP);
        socket.setLinger(0);
        socket.setReceiveTimeOut(POLL_MILLIS);
        socket.bind(ENDPOINT); // before any server socket of the context takes a connection
        threads.start("curve-gate-" + name, this::serve);
    }

    /** Starts the gate of {@code context}, whose server sockets {@code secret} protects. */
    public static CurveGate open(ZContext context, DeploymentSecret secret, String name) {
        return open(context, secret, name, host -> { });
    }

    /**
     * As {@link #open(ZContext, DeploymentSecret, String)}, telling {@code admitted} the peer address of
     * each handshake it admits (a {@code ConnectionGuard}'s {@code admitted}).
     */
    public static CurveGate open(ZContext context, DeploymentSecret secret, String name, Consumer<String> admitted) {
        return new CurveGate(context, secret, name, admitted, LOG, context::createPoller);
    }

    /** As {@link #open(ZContext, DeploymentSecret, String, Consumer)}, logging on {@code log}, its pollers made by {@code pollers}. */
    static CurveGate open(ZContext context, DeploymentSecret secret, String name, Consumer<String> admitted, System.Logger log,
            IntFunction<ZMQ.Poller> pollers) {
        return new CurveGate(context, secret, name, admitted, log, pollers);
    }

    /**
     * Handshakes refused: a wrong key, or a mechanism other than CURVE; and connections to
     * {@linkplain #watch watched} sockets that closed in the ZeroMQ greeting (a peer without the secret).
     */
    public long refused() {
        return refused.sum();
    }

    /**
     * Watches {@code server}, a socket of this gate's context that {@link DeploymentSecret#serve}
     * protects, for peers that do not speak CURVE: each is counted in {@link #refused()} and logged
     * (at most once a minute) with its address. Call before {@code server} binds.
     *
     * @param name what the log calls the socket, e.g. {@code "the controller's reply socket"}
     */
    public void watch(ZMQ.Socket server, String name) {
        server.base().setEventHook(watcher(name), WATCHED_EVENTS);
    }

    /**
     * As {@link #watch}, for a socket whose one event hook is another's (a {@code ConnectionGuard}'s):
     * the hook hands this consumer the socket's events of {@link #WATCHED_EVENTS}. Call before the
     * socket binds.
     *
     * @param name what the log calls the socket
     */
    public zmq.ZMQ.EventConsummer watcher(String name) {
        String address = "inproc://lmcache4j-curve-watch-" + WATCH_IDS.incrementAndGet();
        ZMQ.Socket sender = context.createSocket(SocketType.PAIR);
        sender.setLinger(0);
        sender.bind(address);
        watchSenders.add(sender);
        ZMQ.Socket monitor = context.createSocket(SocketType.PAIR);
        monitor.setLinger(0);
        monitor.connect(address); // here, before the server binds: no connection's events are missed
        newWatches.add(new Watched(monitor, name, new GreetingWatch()));
        // JeroMQ's own monitor writes its events the same way, on the I/O thread, under the socket's monitor lock.
        return event -> withPeer(event).write(sender.base());
    }

    /**
     * {@code event}, an accept's carrying the peer's address where the endpoint's was: read here, on
     * the I/O thread as it accepts, while the channel is surely open. By the time the gate's thread
     * drains the event, JeroMQ may have closed a refused stranger's channel, whose address is then gone.
     */
    static zmq.ZMQ.Event withPeer(zmq.ZMQ.Event event) {
        if (event.event != ZMQ.EVENT_ACCEPTED) {
            return event;
        }
        String peer = peer(event.arg);
        // JeroMQ writes the address's length in one signed byte: a longer one (an IPv6 scope) is not said.
        return new zmq.ZMQ.Event(event.event, peer.length() > Byte.MAX_VALUE ? "a peer" : peer, event.arg);
    }

    private void serve() {
        List<Watched> watched = new ArrayList<>();
        ZMQ.Poller poller = null;
        try {
            while (running) {
                if (poller == null || !newWatches.isEmpty()) {
                    for (Watched w; (w = newWatches.poll()) != null; ) {
                        watched.add(w);
                    }
                    if (poller != null) {
                        poller.close();
                    }
                    poller = pollers.apply(1 + watched.size());
                    poller.register(socket, ZMQ.Poller.POLLIN);
                    for (Watched w : watched) {
                        poller.register(w.monitor(), ZMQ.Poller.POLLIN);
                    }
                }
                if (poller.poll(POLL_MILLIS) <= 0) {
                    continue;
                }
                if (poller.pollin(0)) {
                    ZMsg request = ZMsg.recvMsg(socket, ZMQ.DONTWAIT);
                    if (request != null) {
                        reply(request).send(socket);
                    }
                }
                for (int i = 0; i < watched.size(); i++) {
                    if (poller.pollin(i + 1)) {
                        drain(watched.get(i));
                    }
                }
            }
        } catch (ZMQException e) {
            if (running && e.getErrorCode() != ZMQ.Error.ETERM.getCode()) {
                log.log(Level.ERROR, "the CURVE gate stopped; new connections will not authenticate: " + e);
            }
        } finally {
            if (poller != null) {
                poller.close();
            }
            for (Watched w; (w = newWatches.poll()) != null; ) {
                watched.add(w);
            }
            watched.forEach(w -> w.monitor().close());
            socket.close();
        }
    }

    /** Reads the monitor events waiting on {@code w}: a connection that closed in its greeting is refused. */
    private void drain(Watched w) {
        for (ZMQ.Event e; (e = ZMQ.Event.recv(w.monitor(), ZMQ.DONTWAIT)) != null; ) {
            Object channel = e.resolveValue(); // the connection's SocketChannel, the same object in each of its events
            switch (e.getEvent()) {
                case ZMQ.EVENT_ACCEPTED -> {
                    if (channel != null) {
                        w.greetings().accepted(channel, e.getAddress()); // the peer's, read at the accept (withPeer)
                    }
                }
                case ZMQ.EVENT_HANDSHAKE_PROTOCOL -> w.greetings().greeted();
                // CURVE that fails its cryptography: a client of another deployment (another secret).
                case ZMQ.HANDSHAKE_FAILED_PROTOCOL -> refusedHandshake(w, "a peer", "its CURVE handshake failed, so it has "
                        + "another deployment secret than this process");
                case ZMQ.EVENT_DISCONNECTED -> {
                    if (channel != null) {
                        w.greetings().disconnected(channel).ifPresent(p -> refusedHandshake(w, p, "it does not speak CURVE, "
                                + "so it has no deployment secret"));
                    }
                }
                default -> {
                }
            }
        }
    }

    private void refusedHandshake(Watched w, String peer, String why) {
        refused.increment();
        refusalWarning.refused(peer, w.name(), why, refused.sum());
    }

    /** The address of the peer on {@code channel}, or "a peer" when it is gone already. */
    static String peer(Object channel) {
        try {
            if (channel instanceof SocketChannel c && c.getRemoteAddress() != null) {
                return c.getRemoteAddress().toString().replaceFirst("^/", "");
            }
        } catch (IOException e) {
            // closed meanwhile
        }
        return "a peer";
    }

    /** RFC 27: version, request id, domain, address, identity, mechanism, credentials → version, id, status, text, user, metadata. */
    private ZMsg reply(ZMsg request) {
        String version = request.popString();
        String requestId = request.popString();
        String domain = request.popString();
        String address = request.popString();
        request.pop(); // identity
        String mechanism = request.popString();
        byte[] key = request.size() > 0 ? request.pop().getData() : new byte[0];
        boolean member = "CURVE".equals(mechanism) && DOMAIN.equals(domain) && secret.isMemberKey(key);
        if (!member) {
            refused.increment();
            log.log(Level.DEBUG, () -> "refused a " + mechanism + " handshake from " + address + ": not the deployment's key");
        } else if (address != null) {
            admitted.accept(address);
        }
        ZMsg reply = new ZMsg();
        reply.add(version == null ? "1.0" : version);
        reply.add(requestId == null ? "" : requestId);
        reply.add(member ? "200" : "400");
        reply.add(member ? "OK" : "not a member of this deployment");
        reply.add(member ? "member" : "");
        reply.add(new byte[0]);
        return reply;
    }

    /** Stops the gate and waits for its thread; close it after the context's server sockets. */
    @Override
    public void close() {
        running = false;
        threads.join(JOIN_BOUND);
        for (ZMQ.Socket sender; (sender = watchSenders.poll()) != null; ) {
            sender.close();
        }
    }
}
