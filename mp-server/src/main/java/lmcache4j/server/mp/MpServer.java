package lmcache4j.server.mp;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.zeromq.SocketType;
import org.zeromq.ZMQ;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.zmq.OwnedZContext;
import lmcache4j.engine.zmq.ConnectionGuard;
import lmcache4j.engine.zmq.ReceiveBudget;
import lmcache4j.server.net.AddressInUseException;

/**
 * lmcache4j as LMCache's multiprocess (MP) server: the process vLLM's LMCache MP connector sends
 * every lookup, store and retrieve to (LMCache {@code dev} after PR #5161; wire pin
 * {@code lmcache/v1/multiprocess/transport/zmq_impl/wire.py} at
 * {@value MpService#LMCACHE_WIRE_COMMIT}; {@code docs/design/mp-server.md}).
 *
 * <p>One ROUTER socket, served by one loop thread that owns every table (sessions, instances,
 * pending transfers) and the shared-memory pool's store, so nothing there needs a lock; HTTP
 * requests hand their work to that thread. A request is {@code [identity, uid, op, args...]}; the
 * reply echoes uid and op byte for byte and adds one frame when the result is not None. LMCache's
 * protocol has no error reply: a request that fails is logged, counted
 * ({@code lmcache4j_mp_dropped_total{reason}}) and dropped, and its client times out.
 */
public final class MpServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(MpServer.class.getName());
    private static final int POLL_MS = 20;
    private static final long HOUSEKEEPING_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);
    /** No request has more than identity, uid, op and four arguments; more frames are refused unread. */
    static final int MAX_FRAMES = 8;

    private final MpServerSettings settings;
    private final MpService service;
    private final OwnedZContext context = new OwnedZContext("mp-server", 1);
    /** The ROUTER's connections: bounded, and closed unless one sends a message within the handshake timeout. */
    private final ConnectionGuard guard;
    private final ZMQ.Socket router;
    private final int port;
    private final OwnedThreads threads = new OwnedThreads();
    private final Thread loop;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final LoopWakeup wakeup;
    private final MpHttpApi http;
    private volatile boolean running = true;

    private MpServer(MpServerSettings settings, MpService service) throws IOException {
        this.settings = settings;
        this.service = service;
        this.guard = new ConnectionGuard("mp-server", settings.connections());
        boolean started = false;
        LoopWakeup opened = null;
        try {
            wakeup = opened = new LoopWakeup();
            service.wakeLoopWith(wakeup::wake);
            router = guard.watch(context, context.createSocket(SocketType.ROUTER));
            router.setLinger(0);
            router.setReceiveTimeOut(POLL_MS);
            router.setSendTimeOut(0); // a client that stopped reading loses its replies, never stalls the loop
            new ReceiveBudget(4L * settings.maxMessageBytes(), Optional.of(guard)).apply(router, settings.maxMessageBytes());
            try {
                // Port 0: the kernel's pick ("*"), never JeroMQ's guess in 49152-65535, which can be a port in use.
                router.bind("tcp://" + settings.host() + ":" + (settings.port() == 0 ? "*" : settings.port()));
                String bound = router.getLastEndpoint();
                port = Integer.parseInt(bound.substring(bound.lastIndexOf(':') + 1));
            } catch (RuntimeException e) {
                throw AddressInUseException.of(e, "zmq", "the MP server's socket", settings.host(), settings.port());
            }
            try {
                http = settings.httpPort() < 0 ? null : MpHttpApi.start(settings, this);
            } catch (IOException e) {
                throw AddressInUseException.of(e, "http", "the MP server's HTTP port", settings.httpHost(), settings.httpPort());
            }
            loop = threads.platform("mp-server-loop", this::loop);
            loop.start();
            started = true;
        } finally {
            if (!started) {
                context.close();
                if (opened != null) {
                    opened.close();
                }
                service.close();
            }
        }
    }

    /**
     * Creates the shared-memory pool and starts serving.
     *
     * @throws IOException when the pool cannot be created or a port cannot be bound, saying which
     */
    public static MpServer start(MpServerSettings settings) throws IOException {
        MpService service = MpService.open(settings);
        return new MpServer(settings, service);
    }

    /** The ROUTER socket's port. */
    public int port() {
        return port;
    }

    /** The HTTP port, or -1 without one. */
    public int httpPort() {
        return http == null ? -1 : http.port();
    }

    /** The shared-memory pool's name under {@code /dev/shm}. */
    public String shmName() {
        return settings.shmName();
    }

    /** The ROUTER's connections: open, before their first message, refused, timed out. */
    public ConnectionGuard.Counts connections() {
        return guard.counts();
    }

    /** What the server holds and has done, taken on its loop thread. */
    public MpStatus status() {
        return onLoop(service::status);
    }

    /** Drops every chunk of the pool, locked or not (HTTP {@code /clear-cache}); the lower tiers keep theirs. */
    public void clear() {
        onLoop(() -> {
            service.clear(true);
            return null;
        });
    }

    MpQuotas quotas() {
        return service.quotas();
    }

    /** Runs {@code work} on the loop thread, which owns every table, and waits for it. */
    <T> T onLoop(Callable<T> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        tasks.add(() -> {
            try {
                result.complete(work.call());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        wakeup.wake();
        try {
            return result.get(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the MP server's loop was busy", e);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("the MP server's loop did not answer within 10 s", e);
        }
    }

    private void loop() {
        long nextHousekeeping = System.nanoTime() + HOUSEKEEPING_NANOS;
        List<byte[]> frames = new ArrayList<>(MAX_FRAMES);
        ZMQ.Poller poller = context.createPoller(2);
        int fromClients = poller.register(router, ZMQ.Poller.POLLIN);
        int fromThreads = poller.register(wakeup.channel(), ZMQ.Poller.POLLIN);
        while (running) {
            try {
                poller.poll(POLL_MS);
                if (poller.pollin(fromThreads)) {
                    wakeup.drain();
                }
                byte[] identity = poller.pollin(fromClients) ? router.recv(ZMQ.DONTWAIT) : null;
                if (identity != null) {
                    frames.clear();
                    frames.add(identity);
                    boolean tooMany = false;
                    while (router.hasReceiveMore()) {
                        byte[] f = router.recv(0);
                        if (frames.size() < MAX_FRAMES) {
                            frames.add(f);
                        } else {
                            tooMany = true;
                        }
                    }
                    MpService.Reply reply = tooMany ? service.refuse("too_many_frames", frames)
                            : service.handle(frames, System.nanoTime());
                    if (reply != null) {
                        send(identity, reply);
                    }
                }
                Runnable task;
                while ((task = tasks.poll()) != null) {
                    task.run();
                }
                long now = System.nanoTime();
                for (MpService.Deferred d : service.runCompletions(now)) {
                    send(d.identity(), d.reply());
                }
                if (now - nextHousekeeping >= 0) {
                    service.housekeeping(now);
                    nextHousekeeping = now + HOUSEKEEPING_NANOS;
                }
            } catch (org.zeromq.ZMQException e) {
                if (running) {
                    LOG.log(System.Logger.Level.WARNING, "MP server: socket error, going on: " + e);
                }
            } catch (RuntimeException e) {
                // One bad request must not end the loop every client depends on.
                LOG.log(System.Logger.Level.WARNING, "MP server: a request failed unexpectedly; dropped", e);
            }
        }
        poller.close();
    }

    private void send(byte[] identity, MpService.Reply reply) {
        router.send(identity, ZMQ.SNDMORE | ZMQ.DONTWAIT);
        router.send(reply.uid(), ZMQ.SNDMORE | ZMQ.DONTWAIT);
        if (reply.result() == null) {
            router.send(reply.op(), ZMQ.DONTWAIT);
        } else {
            router.send(reply.op(), ZMQ.SNDMORE | ZMQ.DONTWAIT);
            router.send(reply.result(), ZMQ.DONTWAIT);
        }
    }

    /** Stops serving, joins the loop, closes the socket, then unmaps and unlinks the pool. */
    @Override
    public void close() {
        if (!running) {
            return;
        }
        running = false;
        if (http != null) {
            http.close();
        }
        threads.join(JOIN_BOUND);
        context.close();
        wakeup.close();
        service.close();
    }

    @Override
    public String toString() {
        return "MpServer[tcp://" + settings.host() + ":" + port + ", pool /dev/shm/" + settings.shmName() + "]";
    }
}
