package lmcache4j.server.lookup;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.lookup.LookupEndpoints;
import lmcache4j.engine.lookup.LookupRequest;
import lmcache4j.engine.lookup.LookupResponse;
import lmcache4j.engine.lookup.LookupWire;
import lmcache4j.engine.lookup.MalformedLookupMessageException;
import lmcache4j.engine.lookup.MultipartReader;
import lmcache4j.engine.security.CurveGate;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.zmq.OwnedZContext;
import lmcache4j.engine.zmq.ConnectionGuard;
import lmcache4j.engine.zmq.ConnectionLimits;
import lmcache4j.engine.zmq.ReceiveBudget;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * A worker's side of the lookup service (LMCache's {@code LMCacheAsyncLookupServer}), in the
 * engine's process: binds PULL on its rank's URL for lookups, connects PUSH to the scheduler's URL
 * for answers. Each lookup starts the engine's asynchronous lookup-and-prefetch and is answered
 * when the prefetch is done, with the tokens it made ready; the receiving thread never waits for a
 * prefetch. A message that does not follow LMCache's layout is counted and dropped, and the server
 * keeps serving.
 *
 * <p>Two threads, each the only user of its socket: the receiver (PULL) and the sender (PUSH),
 * which the prefetches' completions feed through a queue.
 */
public final class LookupServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LookupServer.class.getName());
    private static final int POLL_MS = 50;
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);
    /** Largest message accepted; a larger one drops the sender's connection (ZMQ_MAXMSGSIZE). */
    private static final long MAX_MESSAGE_BYTES = 64L << 20;
    /** Requests being received hold at most this much together, however many schedulers connect. */
    private static final long RECEIVE_BUDGET_BYTES = 4 * MAX_MESSAGE_BYTES;

    private final LMCacheEngine engine;
    private final OwnedZContext context = new OwnedZContext("lookup-server", 1);
    /** The lookup socket's connections: bounded, and closed unless proven within the handshake timeout. */
    private final ConnectionGuard guard;
    /** Admits only the deployment's key to the lookup socket, with a deployment secret; else null. */
    private final CurveGate gate;
    private final ZMQ.Socket pull;
    private final ZMQ.Socket push;
    private final BlockingQueue<LookupResponse> outbox = new LinkedBlockingQueue<>();
    private final OwnedThreads threads = new OwnedThreads();
    private volatile boolean running = true;

    private final LongAdder messages = new LongAdder();
    private final LongAdder lookups = new LongAdder();
    private final LongAdder answered = new LongAdder();
    private final LongAdder malformed = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder unsent = new LongAdder();

    /**
     * The server's counters: multipart messages received, lookups in them, answers sent, messages
     * dropped as malformed, lookups the engine refused (answered 0), answers the scheduler's queue
     * did not take.
     */
    public record Stats(long messages, long lookups, long answered, long malformed, long failed, long unsent) {
    }

    private LookupServer(LMCacheEngine engine, String workerUrl, String schedulerUrl, Optional<DeploymentSecret> secret,
            ConnectionLimits limits) {
        this.engine = engine;
        this.guard = new ConnectionGuard("lookup server " + workerUrl, limits);
        CurveGate opened = null;
        try {
            opened = secret.map(s -> CurveGate.open(context, s, "lookup-server", guard::admitted)).orElse(null);
            pull = context.createSocket(SocketType.PULL);
            secret.ifPresent(s -> s.serve(pull));
            guard.watch(context, pull);
            pull.setLinger(0);
            pull.setReceiveTimeOut(POLL_MS);
            new ReceiveBudget(RECEIVE_BUDGET_BYTES, Optional.of(guard)).apply(pull, MAX_MESSAGE_BYTES);
            pull.bind(workerUrl);
            push = context.createSocket(SocketType.PUSH);
            secret.ifPresent(s -> s.connectAsMember(push));
            push.setLinger(0);
            push.connect(schedulerUrl);
        } catch (RuntimeException e) {
            if (opened != null) {
                opened.close(); // its thread closes its own socket, before the context closes the rest
            }
            context.close();
            throw new IllegalStateException("cannot open the lookup server's sockets (" + workerUrl + ", "
                    + schedulerUrl + "): " + e, e);
        }
        this.gate = opened;
        threads.start("lookup-server", this::receive);
        threads.start("lookup-answers", this::sendAnswers);
        LOG.log(Level.INFO, () -> "lookup server: lookups on " + workerUrl + ", answers to " + schedulerUrl);
    }

    /**
     * Starts the lookup server of worker {@code engine.metadata().workerId()} on the endpoints its
     * config names ({@link LookupEndpoints#of}).
     *
     * @throws IllegalArgumentException when {@code enable_async_loading} is off, the endpoints are
     *                                  missing or bad, or this worker is not one that serves lookups
     */
    public static LookupServer start(LMCacheEngine engine) {
        var model = engine.metadata();
        return start(engine, LookupEndpoints.of(engine.config(), model.worldSize(), model.mla()));
    }

    /** As {@link #start(LMCacheEngine)} on given endpoints. */
    public static LookupServer start(LMCacheEngine engine, LookupEndpoints endpoints) {
        Objects.requireNonNull(engine, "engine");
        if (!engine.config().enableAsyncLoading()) {
            throw new IllegalArgumentException("the lookup server answers asynchronous lookups: set enable_async_loading: true");
        }
        int rank = engine.metadata().workerId();
        if (!endpoints.servesLookups(rank)) {
            throw new IllegalArgumentException("worker " + rank + " does not serve lookups (lookup_server_worker_ids "
                    + endpoints.serverWorkerIds() + ")");
        }
        return new LookupServer(engine, endpoints.workerUrl(rank), endpoints.schedulerUrl(),
                DeploymentSecret.fromConfig(engine.config()), ConnectionLimits.of(engine.config()));
    }

    public Stats stats() {
        return new Stats(messages.sum(), lookups.sum(), answered.sum(), malformed.sum(), failed.sum(), unsent.sum());
    }

    /** The lookup socket's connections: open, in their handshake, refused, timed out. */
    public ConnectionGuard.Counts connections() {
        return guard.counts();
    }

    private void receive() {
        try {
            while (running) {
                List<byte[]> frames;
                try {
                    frames = MultipartReader.read(pull, LookupWire.REQUEST_FRAMES * LookupWire.MAX_REQUESTS_PER_MESSAGE);
                } catch (RuntimeException e) {
                    if (running) {
                        LOG.log(Level.WARNING, "receiving a lookup failed: " + e);
                    }
                    continue;
                }
                if (frames == null) {
                    continue;
                }
                messages.increment();
                List<LookupRequest> requests;
                try {
                    requests = LookupWire.decodeRequests(frames);
                } catch (MalformedLookupMessageException e) {
                    malformed.increment();
                    LOG.log(Level.DEBUG, "dropped a malformed lookup message: " + e.getMessage());
                    continue;
                }
                requests.forEach(this::start);
            }
        } finally {
            pull.close();
        }
    }

    /** Starts one lookup's prefetch; its completion queues the answer. Never waits. */
    private void start(LookupRequest request) {
        lookups.increment();
        try {
            engine.asyncLookupAndPrefetch(request.lookupId(), request.chunkHashes(), request.chunkTokens(),
                    request.requestConfigs()).whenComplete((hits, failure) ->
                    outbox.add(new LookupResponse(request.lookupId(), failure == null ? hits : 0)));
        } catch (RuntimeException e) { // a closed engine, a request it refuses: answer "nothing cached"
            failed.increment();
            LOG.log(Level.DEBUG, "lookup " + request.lookupId() + " refused: " + e.getMessage());
            outbox.add(new LookupResponse(request.lookupId(), 0));
        }
    }

    private void sendAnswers() {
        try {
            while (running || !outbox.isEmpty()) {
                LookupResponse response = outbox.poll(POLL_MS, TimeUnit.MILLISECONDS);
                if (response == null) {
                    continue;
                }
                List<byte[]> frames = LookupWire.encodeResponse(response);
                boolean ok = push.send(frames.get(0), ZMQ.SNDMORE | ZMQ.DONTWAIT) && push.send(frames.get(1), ZMQ.DONTWAIT);
                if (ok) {
                    answered.increment();
                } else {
                    unsent.increment();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            push.close();
        }
    }

    /** Stops both threads and closes the sockets; the engine stays the caller's. */
    @Override
    public void close() {
        if (!running) {
            return;
        }
        running = false;
        threads.join(JOIN_BOUND);
        if (gate != null) {
            gate.close(); // its thread closes its own socket, before the context closes the rest
        }
        context.close();
    }
}
