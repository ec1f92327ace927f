package lmcache4j.engine.security;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

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
 */
public final class CurveGate implements AutoCloseable {
    static final String DOMAIN = "lmcache4j";
    private static final System.Logger LOG = System.getLogger(CurveGate.class.getName());
    private static final String ENDPOINT = "inproc://zeromq.zap.01";
    private static final int POLL_MILLIS = 100;
    /** The gate's thread polls every {@value #POLL_MILLIS} ms: it ends well within this. */
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);

    private final DeploymentSecret secret;
    private final ZMQ.Socket socket;
    private final OwnedThreads threads = new OwnedThreads();
    private final LongAdder refused = new LongAdder();
    private final Consumer<String> admitted;
    private volatile boolean running = true;

    private CurveGate(ZContext context, DeploymentSecret secret, String name, Consumer<String> admitted) {
        this.secret = secret;
        this.admitted = admitted;
        this.socket = context.createSocket(SocketType.REP);
        socket.setLinger(0);
        socket.setReceiveTimeOut(POLL_MILLIS);
        socket.bind(ENDPOINT); // before any server socket of the context takes a connection
        threads.start("curve-gate-" + name, this::serve);
    }

    /** Starts the gate of {@code context}, whose server sockets {@code secret} protects. */
    public static CurveGate open(ZContext context, DeploymentSecret secret, String name) {
        return new CurveGate(context, secret, name, host -> { });
    }

    /**
     * As {@link #open(ZContext, DeploymentSecret, String)}, telling {@code admitted} the peer address of
     * each handshake it admits (a {@code ConnectionGuard}'s {@code admitted}).
     */
    public static CurveGate open(ZContext context, DeploymentSecret secret, String name, Consumer<String> admitted) {
        return new CurveGate(context, secret, name, admitted);
    }

    /** Handshakes refused: a wrong key, or a mechanism other than CURVE. */
    public long refused() {
        return refused.sum();
    }

    private void serve() {
        try {
            while (running) {
                ZMsg request = ZMsg.recvMsg(socket, true);
                if (request != null) {
                    reply(request).send(socket);
                }
            }
        } catch (ZMQException e) {
            if (running && e.getErrorCode() != ZMQ.Error.ETERM.getCode()) {
                LOG.log(Level.ERROR, "the CURVE gate stopped; new connections will not authenticate: " + e);
            }
        } finally {
            socket.close();
        }
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
            LOG.log(Level.DEBUG, () -> "refused a " + mechanism + " handshake from " + address + ": not the deployment's key");
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
    }
}
