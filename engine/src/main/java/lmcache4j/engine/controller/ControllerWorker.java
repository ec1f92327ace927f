package lmcache4j.engine.controller;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.zeromq.SocketType;
import org.zeromq.ZMQ;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.controller.message.HeartbeatCommand;
import lmcache4j.engine.controller.message.KVOpEvent;
import lmcache4j.engine.controller.message.MalformedMessageException;
import lmcache4j.engine.controller.message.UnknownMessageTypeException;
import lmcache4j.engine.controller.message.WorkerMsg;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.controller.message.WorkerReqRetMsg;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.LayerCacheEngineKey;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.metrics.MetricsSource;
import lmcache4j.engine.security.CurveGate;
import lmcache4j.engine.zmq.OwnedZContext;
import lmcache4j.engine.zmq.ConnectionGuard;
import lmcache4j.engine.zmq.ReceiveBudget;
import lmcache4j.engine.zmq.ZmqAddress;

/**
 * One engine worker's side of LMCache's cache controller ({@code lmcache/v1/cache_controller/worker.py}):
 * registers over a DEALER at start, heartbeats on a second DEALER to the address the registration
 * reply names, reports every tier's admits and evicts as {@code BatchedKVOperationMsg}s (one per
 * location, sequence numbers increasing per location) over PUSH, runs full syncs when the
 * controller asks or when reports were dropped, answers control messages on its REP socket, and
 * PUSHes {@code DeRegisterMsg} at close.
 *
 * <p>Only the worker's own thread touches the sockets (JeroMQ sockets are not thread safe). The
 * tiers only enqueue ({@link ReportQueue}); sends never block (linger 0, send timeouts, high-water
 * marks), so a slow or dead controller costs the engine nothing but dropped reports, which are
 * counted and followed by a full re-sync once the controller answers again.
 */
public final class ControllerWorker implements AutoCloseable, MetricsSource {
    private static final System.Logger LOG = System.getLogger(ControllerWorker.class.getName());
    private static final long POLL_MS = 10;
    private static final Duration JOIN_BOUND = Duration.ofSeconds(10);
    private static final long FLUSH_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    private static final int MAX_BATCH_OPS = 4096;
    private static final int SYNC_BATCH_KEYS = 4096;
    private static final long REGISTER_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** How often unanswered registrations are reported. */
    private static final long UNREGISTERED_WARNING_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final long REQUEST_TIMEOUT_MS = 2000;
    private static final long SYNC_STATUS_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final int MISSED_HEARTBEATS_BEFORE_REREGISTER = 3;
    private static final int HWM = 10_000;
    /**
     * The largest message any of this worker's sockets takes: a control message carries at most one
     * prompt's tokens (4M tokens at 4 bytes). A longer one disconnects its sender before ZeroMQ
     * reserves the size it declares (one 12-byte header declaring 1.5 GiB did that without this).
     */
    public static final long MAX_MESSAGE_BYTES = 16L << 20;
    /** All this worker's sockets together hold at most four largest messages being received. */
    static final long RECEIVE_BUDGET_BYTES = 4 * MAX_MESSAGE_BYTES;

    /** The control socket's connections: bounded, and closed unless proven within the handshake timeout. */
    private final ConnectionGuard guard;
    private final ReceiveBudget receiveBudget;

    private final ControllerWorkerSettings settings;
    private final WorkerControls engine;
    private final ReportQueue queue;
    private final ControlRequestHandler control;
    private final String ip;
    private final OwnedThreads threads = new OwnedThreads();
    private final Thread thread;
    private final CountDownLatch bound = new CountDownLatch(1);
    private volatile boolean running = true;
    private volatile int controlPort;
    private volatile boolean registered;
    private volatile RuntimeException startFailure;

    private final LongAdder reportedOps = new LongAdder();
    private final LongAdder unregisteredOps = new LongAdder();
    private final LongAdder pushFailures = new LongAdder();
    private final LongAdder fullSyncs = new LongAdder();
    private final LongAdder fullSyncFailures = new LongAdder();
    private final LongAdder registrations = new LongAdder();
    private final LongAdder heartbeats = new LongAdder();
    private final LongAdder missedHeartbeats = new LongAdder();
    private final LongAdder controlRequests = new LongAdder();
    private final LongAdder controlMalformed = new LongAdder();
    private final LongAdder controlUnknownType = new LongAdder();

    // ---- the worker thread's own state (no other thread reads it) ----
    private OwnedZContext context;
    /** Admits only the deployment's key to the control socket, with a deployment secret. */
    private CurveGate gate;
    private ZMQ.Socket push;
    private ZMQ.Socket dealer;
    private ZMQ.Socket heartbeat;
    private ZMQ.Socket rep;
    private final Map<String, List<KVOpEvent>> pending = new LinkedHashMap<>();
    private final Map<String, long[]> seqByLocation = new LinkedHashMap<>();
    private long syncCounter;

    private ControllerWorker(ControllerWorkerSettings settings, WorkerControls engine) {
        this.settings = settings;
        this.engine = engine;
        this.guard = new ConnectionGuard("controller worker " + settings.workerId() + "'s control socket",
                settings.controlConnections());
        this.receiveBudget = new ReceiveBudget(RECEIVE_BUDGET_BYTES, Optional.of(guard));
        this.queue = new ReportQueue(settings.queueCapacity(), engine::controllerKey);
        this.control = new ControlRequestHandler(engine);
        this.ip = localAddressToward(settings.replyAddress());
        this.thread = threads.platform("controller-worker-" + settings.workerId(), this::run);
    }

    /**
     * Binds the control socket, attaches to every tier and starts the worker's thread; returns
     * without waiting for the controller (registration is retried in the background).
     *
     * @param config   an engine config with {@code enable_controller} and the controller's URLs
     * @param workerId this worker's id (its tensor-parallel rank)
     * @throws IllegalArgumentException naming a missing or bad controller setting
     * @throws IllegalStateException when the control socket cannot be bound
     */
    public static ControllerWorker start(LMCacheEngineConfig config, int workerId, WorkerControls engine) {
        ControllerWorker worker = new ControllerWorker(ControllerWorkerSettings.from(config, workerId), engine);
        worker.thread.start();
        try {
            worker.bound.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            worker.close();
            throw new IllegalStateException("interrupted while starting the controller worker", e);
        }
        if (worker.startFailure != null) {
            worker.close();
            throw worker.startFailure;
        }
        engine.setResidencyListener(worker.queue);
        return worker;
    }

    /** The port of this worker's REP (control) socket. */
    public int controlPort() {
        return controlPort;
    }

    /** The address this worker tells the controller to reach its control socket at. */
    public String controlIp() {
        return ip;
    }

    /** Whether the controller has answered this worker's registration (and not missed heartbeats since). */
    public boolean registered() {
        return registered;
    }

    /** Counters, by metric name (also published into the engine's metrics). */
    public Map<String, Long> counters() {
        Map<String, Long> c = new LinkedHashMap<>();
        c.put("lmcache:controller_ops_queued", queue.queued());
        c.put("lmcache:controller_ops_dropped", queue.dropped());
        c.put("lmcache:controller_ops_reported", reportedOps.sum());
        c.put("lmcache:controller_ops_unregistered", unregisteredOps.sum());
        c.put("lmcache:controller_push_failures", pushFailures.sum());
        c.put("lmcache:controller_full_syncs", fullSyncs.sum());
        c.put("lmcache:controller_full_sync_failures", fullSyncFailures.sum());
        c.put("lmcache:controller_registrations", registrations.sum());
        c.put("lmcache:controller_heartbeats", heartbeats.sum());
        c.put("lmcache:controller_missed_heartbeats", missedHeartbeats.sum());
        c.put("lmcache:controller_control_requests", controlRequests.sum());
        c.put("lmcache:controller_control_malformed", controlMalformed.sum());
        c.put("lmcache:controller_control_unknown_type", controlUnknownType.sum());
        ConnectionGuard.Counts connections = guard.counts();
        c.put("lmcache:controller_control_connections", (long) connections.open());
        c.put("lmcache:controller_control_connections_handshaking", (long) connections.handshaking());
        c.put("lmcache:controller_control_connections_refused", connections.refused());
        c.put("lmcache:controller_control_handshake_timeouts", connections.timedOut());
        return c;
    }

    @Override
    public void publishMetrics(EngineMetrics metrics) {
        for (String name : counters().keySet()) {
            metrics.bindTierMetric(new EngineMetrics.TierMetric(name, "Cache-controller worker: "
                    + name.substring("lmcache:controller_".length()).replace('_', ' ') + " (lmcache4j)", true,
                    () -> counters().get(name)));
        }
    }

    /** Flushes what is queued, PUSHes {@code DeRegisterMsg}, closes the sockets and stops the thread. */
    @Override
    public void close() {
        engine.setResidencyListener(lmcache4j.engine.storage.ResidencyListener.NONE);
        running = false;
        threads.join(JOIN_BOUND); // stopped by its flag, not an interrupt: the flush and the deregistration still go out
    }

    // ---- the worker thread ----------------------------------------------------------------

    private void run() {
        context = new OwnedZContext("controller-worker-" + settings.workerId(), 1);
        try {
            gate = settings.secret().map(s -> CurveGate.open(context, s, "worker-" + settings.workerId(), guard::admitted))
                    .orElse(null);
            rep = guard.watch(context, socket(SocketType.REP));
            try {
                if (settings.controlPort().isPresent()) {
                    rep.bind("tcp://" + ip + ":" + settings.controlPort().get());
                    controlPort = settings.controlPort().get();
                } else {
                    controlPort = rep.bindToRandomPort("tcp://" + ip);
                }
            } catch (RuntimeException e) {
                startFailure = new IllegalStateException("cannot bind the controller worker's control socket on " + ip
                        + settings.controlPort().map(p -> ":" + p).orElse("") + ": " + e.getMessage(), e);
                return;
            } finally {
                bound.countDown();
            }
            push = socket(SocketType.PUSH);
            push.setSendTimeOut(0);
            push.connect(settings.pullAddress());
            loop();
            flushPending();
            deregister();
        } catch (RuntimeException e) {
            LOG.log(Level.ERROR, "controller worker stopped: " + e, e);
        } finally {
            if (gate != null) {
                gate.close(); // its thread closes its own socket, before the context closes the rest
            }
            context.close(); // closes every socket (linger 0 except the deregistration's)
        }
    }

    private ZMQ.Socket socket(SocketType type) {
        ZMQ.Socket s = context.createSocket(type);
        settings.secret().ifPresent(secret -> {
            if (type == SocketType.REP) {
                secret.serve(s);
            } else {
                secret.connectAsMember(s);
            }
        });
        s.setLinger(0);
        receiveBudget.apply(s, MAX_MESSAGE_BYTES);
        s.setSndHWM(HWM);
        s.setRcvHWM(HWM);
        return s;
    }

    // The loop's state: read and written by the worker thread only.
    private long nextRegister;
    private long nextHeartbeat = Long.MAX_VALUE;
    private long nextFlush;
    private boolean heartbeatOutstanding;
    private int missedInARow;
    private ZMQ.Poller poller;

    private void loop() {
        nextRegister = System.nanoTime();
        nextFlush = nextRegister + FLUSH_NANOS;
        try {
            while (running) {
                long now = System.nanoTime();
                if (!registered && now >= nextRegister) {
                    warnIfLongUnregistered(now);
                    dealer = replace(dealer, SocketType.DEALER, settings.replyAddress());
                    sendRequest(dealer, register());
                    nextRegister = now + REGISTER_RETRY_NANOS;
                    poller = closePoller(poller);
                }
                if (pollSockets() || heartbeatIfDue()) {
                    continue; // registered, or registering again: start the round afresh
                }
                drainQueue();
                if (registered && queue.takeResyncRequest()) {
                    fullSyncAll();
                    poller = closePoller(poller);
                }
                if (pendingOps() >= MAX_BATCH_OPS || System.nanoTime() >= nextFlush) {
                    flushPending();
                    nextFlush = System.nanoTime() + FLUSH_NANOS;
                }
            }
        } finally {
            poller = closePoller(poller);
        }
    }

    /**
     * Waits up to {@code POLL_MS} for the control socket, the registration reply and a heartbeat
     * reply, and handles what came. True when the worker just registered (the sockets changed).
     */
    private boolean pollSockets() {
        if (poller == null) {
            poller = context.createPoller(3);
            poller.register(rep, ZMQ.Poller.POLLIN);
            poller.register(dealer, ZMQ.Poller.POLLIN);
            heartbeatPolled = heartbeat != null;
            if (heartbeatPolled) {
                poller.register(heartbeat, ZMQ.Poller.POLLIN);
            }
        }
        poller.poll(POLL_MS);
        if (poller.pollin(0)) {
            serveControl();
        }
        if (poller.pollin(1)) {
            Optional<ControllerMessage> reply = receiveReply(dealer);
            if (reply.orElse(null) instanceof WorkerReqRetMsg.RegisterRetMsg r && !registered) {
                onRegistered(r);
                poller = closePoller(poller);
                heartbeatOutstanding = false;
                missedInARow = 0;
                nextHeartbeat = settings.heartbeatNanos() > 0
                        ? System.nanoTime() + settings.heartbeatDelayNanos() : Long.MAX_VALUE;
                return true;
            }
        }
        if (heartbeatPolled && poller.pollin(2)) {
            Optional<ControllerMessage> reply = receiveReply(heartbeat);
            if (reply.orElse(null) instanceof WorkerReqRetMsg.HeartbeatRetMsg r) {
                heartbeatOutstanding = false;
                missedInARow = 0;
                runCommands(r);
            }
        }
        return false;
    }

    /**
     * Sends the heartbeat when it is due. A heartbeat still unanswered counts as missed; after
     * {@code MISSED_HEARTBEATS_BEFORE_REREGISTER} in a row the worker registers again (true).
     */
    private boolean heartbeatIfDue() {
        long now = System.nanoTime();
        if (!registered || heartbeat == null || now < nextHeartbeat) {
            return false;
        }
        if (heartbeatOutstanding) {
            missedHeartbeats.increment();
            if (++missedInARow >= MISSED_HEARTBEATS_BEFORE_REREGISTER) {
                LOG.log(Level.WARNING, "the controller missed " + missedInARow + " heartbeats; registering again");
                registered = false;
                nextRegister = now;
                queue.requestResync();
                return true;
            }
            // A reply still queued from a dead controller would answer the wrong request: start afresh.
            heartbeat = replace(heartbeat, SocketType.DEALER, heartbeatAddress);
            poller = closePoller(poller);
        }
        sendRequest(heartbeat, new WorkerReqMsg.HeartbeatMsg(settings.instanceId(), settings.workerId(), ip,
                controlPort, settings.peerInitUrl()));
        heartbeats.increment();
        heartbeatOutstanding = true;
        nextHeartbeat = now + settings.heartbeatNanos();
        return false;
    }

    private static ZMQ.Poller closePoller(ZMQ.Poller poller) {
        if (poller != null) {
            poller.close();
        }
        return null;
    }

    private ZMQ.Socket replace(ZMQ.Socket old, SocketType type, String address) {
        if (old != null) {
            context.destroySocket(old);
        }
        ZMQ.Socket s = socket(type);
        s.setSendTimeOut(0);
        s.connect(address);
        return s;
    }

    /** When the current run of unanswered registrations began, and when to say so next (worker thread only). */
    private long unregisteredSince = -1;
    private long nextUnregisteredWarning;

    /**
     * Says, at most every {@code UNREGISTERED_WARNING_NANOS}, that registrations go unanswered: a
     * controller that is down, or one whose deployment secret differs (CURVE drops the handshake
     * without a word, so the log is the only sign).
     */
    private void warnIfLongUnregistered(long now) {
        if (unregisteredSince < 0) {
            unregisteredSince = now;
            nextUnregisteredWarning = now + UNREGISTERED_WARNING_NANOS;
        } else if (now >= nextUnregisteredWarning) {
            nextUnregisteredWarning = now + UNREGISTERED_WARNING_NANOS;
            long seconds = (now - unregisteredSince) / 1_000_000_000L;
            LOG.log(Level.WARNING, "the cache controller at " + settings.replyAddress() + " has answered no registration for "
                    + seconds + " s: is it running, and does it use the same deployment secret (deployment_secret_file "
                    + (settings.secret().isPresent() ? "set here" : "not set here") + ")?");
        }
    }

    private String heartbeatAddress;
    private boolean heartbeatPolled;

    private WorkerReqMsg.RegisterMsg register() {
        return new WorkerReqMsg.RegisterMsg(settings.instanceId(), settings.workerId(), ip, controlPort,
                settings.peerInitUrl());
    }

    private void onRegistered(WorkerReqRetMsg.RegisterRetMsg reply) {
        unregisteredSince = -1;
        registrations.increment();
        Optional<String> url = reply.heartbeatUrl();
        if (url.isEmpty()) {
            LOG.log(Level.WARNING, "the controller's RegisterRetMsg names no heartbeat_url; heartbeating on the reply socket");
        }
        heartbeatAddress = url.map(u -> ZmqAddress.of(u, "heartbeat_url"))
                .orElse(settings.replyAddress());
        heartbeat = replace(heartbeat, SocketType.DEALER, heartbeatAddress);
        registered = true;
        // Whatever was admitted before (disk chunks recovered at start, reports dropped while unregistered).
        queue.requestResync();
        LOG.log(Level.INFO, () -> "registered with the cache controller as " + settings.instanceId() + "/"
                + settings.workerId() + ", control socket " + ip + ":" + controlPort + ", heartbeats to " + heartbeatAddress);
    }

    private void runCommands(WorkerReqRetMsg.HeartbeatRetMsg reply) {
        for (HeartbeatCommand c : reply.commands()) {
            switch (c) {
                case HeartbeatCommand.FullSyncCommand f -> {
                    LOG.log(Level.INFO, () -> "the controller asks for a full sync: " + f.reason().orElse("no reason given"));
                    queue.requestResync();
                }
                case HeartbeatCommand.OtherCommand o ->
                        LOG.log(Level.WARNING, "ignoring unknown heartbeat command " + o.commandType());
            }
        }
    }

    // ---- requests over a DEALER -----------------------------------------------------------

    private static boolean sendRequest(ZMQ.Socket s, ControllerMessage request) {
        byte[] payload = ControllerCodec.encode(request);
        return s.sendMore(new byte[0]) && s.send(payload, ZMQ.DONTWAIT);
    }

    /** The reply waiting on {@code s} ([empty, payload]), decoded; empty when malformed. */
    private static Optional<ControllerMessage> receiveReply(ZMQ.Socket s) {
        byte[] first = s.recv(ZMQ.DONTWAIT);
        if (first == null) {
            return Optional.empty();
        }
        byte[] payload = first;
        while (s.hasReceiveMore()) {
            payload = s.recv(0);
        }
        try {
            return Optional.of(ControllerCodec.decode(payload));
        } catch (MalformedMessageException e) {
            LOG.log(Level.WARNING, "unreadable reply from the controller: " + e.getMessage());
            return Optional.empty();
        }
    }

    /** Sends {@code request} and waits up to the request timeout for a reply of {@code type}, skipping others. */
    private <T extends ControllerMessage> Optional<T> request(ControllerMessage request, Class<T> type) {
        if (!sendRequest(dealer, request)) {
            return Optional.empty();
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(REQUEST_TIMEOUT_MS);
        try (ZMQ.Poller poller = context.createPoller(1)) {
            poller.register(dealer, ZMQ.Poller.POLLIN);
            while (running) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) {
                    return Optional.empty();
                }
                poller.poll(Math.min(left, 50));
                // This thread also owns the control socket: a slow controller (or a long full sync) must not leave
                // the controller's own control requests unanswered, so they are served while the reply is awaited.
                serveControl();
                if (poller.pollin(0)) {
                    Optional<ControllerMessage> reply = receiveReply(dealer);
                    if (reply.isPresent() && type.isInstance(reply.get())) {
                        return Optional.of(type.cast(reply.get()));
                    }
                    if (reply.orElse(null) instanceof ErrorMsg error) {
                        LOG.log(Level.WARNING, "the controller answered " + request.getClass().getSimpleName()
                                + " with an error: " + error.error());
                        return Optional.empty();
                    }
                }
            }
        }
        return Optional.empty();
    }

    // ---- control socket -------------------------------------------------------------------

    private void serveControl() {
        byte[] frame = rep.recv(ZMQ.DONTWAIT);
        if (frame == null) {
            return;
        }
        while (rep.hasReceiveMore()) { // a REP request is one frame; extra frames make it malformed
            rep.recv(0);
            frame = new byte[0];
        }
        controlRequests.increment();
        ControllerMessage reply;
        try {
            reply = control.answer(ControllerCodec.decode(frame));
        } catch (UnknownMessageTypeException e) {
            controlUnknownType.increment();
            reply = new ErrorMsg(e.getMessage());
        } catch (MalformedMessageException e) {
            controlMalformed.increment();
            reply = new ErrorMsg("malformed control message: " + e.getMessage());
        }
        rep.send(ControllerCodec.encode(reply), ZMQ.DONTWAIT);
    }

    // ---- admits and evicts ----------------------------------------------------------------

    private void drainQueue() {
        ReportQueue.Op op;
        int drained = 0;
        while (drained < MAX_BATCH_OPS * 4 && (op = queue.poll()) != null) {
            drained++;
            if (!registered) {
                // The controller does not know this worker yet; the full sync after registration covers it.
                unregisteredOps.increment();
                continue;
            }
            long seq = seqByLocation.computeIfAbsent(op.location(), l -> new long[1])[0]++;
            pending.computeIfAbsent(op.location(), l -> new ArrayList<>()).add(new KVOpEvent(op.type(), op.key(), seq));
        }
    }

    private int pendingOps() {
        int n = 0;
        for (List<KVOpEvent> ops : pending.values()) {
            n += ops.size();
        }
        return n;
    }

    /** One multipart message, a {@code BatchedKVOperationMsg} per location; dropped (and a re-sync requested) when the PUSH queue is full. */
    private void flushPending() {
        if (pending.isEmpty()) {
            return;
        }
        List<byte[]> frames = new ArrayList<>(pending.size());
        int ops = 0;
        for (Map.Entry<String, List<KVOpEvent>> e : pending.entrySet()) {
            if (!e.getValue().isEmpty()) {
                frames.add(ControllerCodec.encode(new WorkerMsg.BatchedKVOperationMsg(settings.instanceId(),
                        settings.workerId(), e.getKey(), e.getValue())));
                ops += e.getValue().size();
            }
        }
        pending.clear();
        if (pushFrames(frames)) {
            reportedOps.add(ops);
        } else {
            pushFailures.increment();
            queue.requestResync();
        }
    }

    private boolean pushFrames(List<byte[]> frames) {
        if (frames.isEmpty()) {
            return true;
        }
        // ZeroMQ delivers a multipart message whole or not at all: once the first frame is taken, so are the rest.
        for (int i = 0; i < frames.size(); i++) {
            boolean last = i == frames.size() - 1;
            boolean sent = push.send(frames.get(i), ZMQ.DONTWAIT | (last ? 0 : ZMQ.SNDMORE));
            if (!sent) {
                return false;
            }
        }
        return true;
    }

    // ---- full sync ------------------------------------------------------------------------

    /** Sends every tier's keys (LMCache's FullSyncStart, batches and end, then status polls until complete). */
    private void fullSyncAll() {
        flushPending(); // ordered before the sync's snapshot
        fullSyncs.increment();
        boolean ok = true;
        for (Map.Entry<String, List<CacheKey>> tier : engine.residentKeys().entrySet()) {
            ok &= syncLocation(tier.getKey(), controllerKeys(tier.getValue()));
            if (!running) {
                return;
            }
        }
        if (!ok) {
            fullSyncFailures.increment();
            queue.requestResync();
        }
    }

    /** The distinct controller keys of {@code keys}, sorted; chunks this engine has not keyed are left out. */
    private long[] controllerKeys(List<CacheKey> keys) {
        long[] out = new long[keys.size()];
        int n = 0;
        for (CacheKey key : keys) {
            if (key instanceof LayerCacheEngineKey layer && layer.layerId() != 0) {
                continue;
            }
            OptionalLong k = engine.controllerKey(key.chunkKey().chunkHash());
            if (k.isPresent()) {
                out[n++] = k.getAsLong();
            }
        }
        out = Arrays.copyOf(out, n);
        Arrays.sort(out);
        return Arrays.stream(out).distinct().toArray();
    }

    private boolean syncLocation(String location, long[] keys) {
        String syncId = settings.instanceId() + "_" + settings.workerId() + "_" + location + "_" + (++syncCounter);
        int batches = (keys.length + SYNC_BATCH_KEYS - 1) / SYNC_BATCH_KEYS;
        Optional<WorkerReqRetMsg.FullSyncStartRetMsg> started = request(new WorkerReqMsg.FullSyncStartMsg(
                settings.instanceId(), settings.workerId(), location, syncId, keys.length, batches),
                WorkerReqRetMsg.FullSyncStartRetMsg.class);
        if (started.isEmpty() || !started.get().accepted()) {
            LOG.log(Level.WARNING, "full sync of " + location + " not started: "
                    + started.map(r -> r.errorMsg().orElse("refused")).orElse("no answer"));
            return false;
        }
        for (int b = 0; b < batches; b++) {
            if (!pushBatch(location, syncId, keys, b)) {
                return false;
            }
        }
        if (!pushFrames(List.of(ControllerCodec.encode(new WorkerMsg.FullSyncEndMsg(settings.instanceId(),
                settings.workerId(), location, syncId, keys.length))))) {
            return false;
        }
        long deadline = System.nanoTime() + SYNC_STATUS_TIMEOUT_NANOS;
        while (running && System.nanoTime() < deadline) {
            Optional<WorkerReqRetMsg.FullSyncStatusRetMsg> status = request(new WorkerReqMsg.FullSyncStatusMsg(
                    settings.instanceId(), settings.workerId(), syncId), WorkerReqRetMsg.FullSyncStatusRetMsg.class);
            if (status.isEmpty()) {
                return false;
            }
            if (status.get().isComplete() || status.get().canExitFreeze()) {
                return true;
            }
            for (long missing : status.get().missingBatches()) {
                if (missing >= 0 && missing < batches && !pushBatch(location, syncId, keys, (int) missing)) {
                    return false;
                }
            }
            serveControl();
            sleepQuietly(50);
        }
        return false;
    }

    private boolean pushBatch(String location, String syncId, long[] keys, int batch) {
        int from = batch * SYNC_BATCH_KEYS;
        long[] slice = Arrays.copyOfRange(keys, from, Math.min(keys.length, from + SYNC_BATCH_KEYS));
        return pushFrames(List.of(ControllerCodec.encode(new WorkerMsg.FullSyncBatchMsg(settings.instanceId(),
                settings.workerId(), location, syncId, batch, slice))));
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void deregister() {
        // The one message worth a moment at close: let ZeroMQ try to deliver it for half a second.
        push.setLinger(500);
        pushFrames(List.of(ControllerCodec.encode(new WorkerMsg.DeRegisterMsg(settings.instanceId(),
                settings.workerId(), ip, controlPort))));
    }

    /** The local address that routes toward the controller (what the controller can reach this worker at). */
    private static String localAddressToward(String zmqAddress) {
        URI uri = URI.create(zmqAddress);
        try (DatagramSocket probe = new DatagramSocket()) {
            probe.connect(InetAddress.getByName(uri.getHost()), uri.getPort());
            InetAddress local = probe.getLocalAddress();
            return local.isAnyLocalAddress() ? InetAddress.getLoopbackAddress().getHostAddress() : local.getHostAddress();
        } catch (IOException | RuntimeException e) {
            return InetAddress.getLoopbackAddress().getHostAddress();
        }
    }
}
