package lmcache4j.server.controller;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.controller.message.Position;
import lmcache4j.engine.controller.message.WorkerInfo;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.security.CurveGate;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.zmq.OwnedZContext;
import lmcache4j.engine.zmq.ConnectionGuard;
import lmcache4j.engine.zmq.ReceiveBudget;
import lmcache4j.server.http.BadRequestException;
import lmcache4j.server.controller.http.ControllerHttpApi;
import lmcache4j.server.http.JsonBody;
import lmcache4j.server.http.JsonHttpServer;
import lmcache4j.server.net.AddressInUseException;
import lmcache4j.server.controller.index.ChunkIndex;
import lmcache4j.server.controller.internal.ControllerParts;
import lmcache4j.server.controller.net.WorkerConnections;
import lmcache4j.server.controller.registry.FullSyncTracker;
import lmcache4j.server.controller.registry.WorkerRegistry;

/**
 * The cache controller: LMCache's controller protocol on three bound ZeroMQ sockets (PULL for
 * pushes, ROUTER for requests, ROUTER for heartbeats), REQ sockets to every worker for control
 * messages, and the HTTP JSON API. See {@code docs/controller.md}.
 *
 * <p>Threads: one ingestion thread owns the bound sockets and is the index's only writer
 * ({@link IngestLoop}); HTTP threads serve lookups (optimistic reads of the index) and forward
 * control commands; an orchestration thread runs orchestrators' fire-and-forget commands.
 */
public final class ControllerServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ControllerServer.class.getName());
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);

    static {
        ControllerParts.handOver(ControllerServer::index, ControllerServer::registry); // the benchmarks reach them there
    }

    private final ControllerConfig config;
    private final Optional<DeploymentSecret> secret;
    private final OwnedZContext context;
    /** The three sockets' connections: bounded, and closed unless proven within the handshake timeout. */
    private final ConnectionGuard guard;
    /** The REQ sockets to workers live in a context of their own: forwarding never shares the ingestion's I/O thread. */
    private final ZContext forwardContext = new OwnedZContext("controller-requests", 1);
    /** Admits only the deployment's key to the bound sockets, with a deployment secret; else null. */
    private CurveGate gate;
    /** The ingestion and orchestration threads (the HTTP server and the orchestrator own theirs). */
    private final OwnedThreads threads = new OwnedThreads();
    private final ChunkIndex index;
    private final WorkerRegistry registry;
    private final FullSyncTracker sync;
    private final ControllerMetrics metrics;
    private final ReceiveBudget receiveBudget;
    private final ControllerLookup lookup;
    private final WorkerConnections connections;
    private final Orchestrator orchestrator;
    private final ExecutorService orchestration;
    private final IngestLoop loop;
    private final JsonHttpServer http;
    private final Endpoint pullEndpoint;
    private final Endpoint replyEndpoint;
    private final Endpoint heartbeatEndpoint;
    private final Endpoint advertisedHeartbeat;
    private final AtomicLong eventIds = new AtomicLong();
    private volatile boolean closed;

    /** Starts a controller; the sockets and the HTTP server are bound when this returns. */
    public static ControllerServer start(ControllerConfig config) {
        return new ControllerServer(config, InstantSource.system());
    }

    /** As {@link #start(ControllerConfig)} with a given clock for heartbeat liveness (tests). */
    public static ControllerServer start(ControllerConfig config, InstantSource clock) {
        return new ControllerServer(config, clock);
    }

    private ControllerServer(ControllerConfig config, InstantSource clock) {
        this.config = config;
        secret = config.secretFile().map(DeploymentSecret::fromFile); // a bad file is refused before a port is bound
        metrics = new ControllerMetrics();
        guard = new ConnectionGuard("controller", config.caps().connections());
        // What the launcher's heap sizing sets aside for messages in flight: (queued + 2) frames.
        receiveBudget = new ReceiveBudget((config.caps().maxQueuedOrchestrations() + 2L) * config.maxFrameBytes(),
                Optional.of(guard));
        index = new ChunkIndex(config.expectedEntries(), config.caps().maxEntries());
        sync = new FullSyncTracker(index);
        registry = new WorkerRegistry(index, sync, clock, config.workerTimeout(), config.caps().maxWorkers());
        ChunkHasher hasher = hasher(config);
        lookup = new ControllerLookup(new PromptKeys(config.chunkSize(), config.saveUnfullChunk(), hasher, config.chunkKeys()), index, metrics);
        context = new OwnedZContext("controller", 1);
        boolean started = false;
        try {
            gate = secret.map(s -> CurveGate.open(context, s, "controller", guard::admitted)).orElse(null);
            ZMQ.Socket pull = bind(SocketType.PULL, "pull", config.pull());
            ZMQ.Socket reply = bind(SocketType.ROUTER, "reply", config.reply());
            ZMQ.Socket heartbeat = bind(SocketType.ROUTER, "heartbeat", config.heartbeat());
            pullEndpoint = config.pull().withPortOf(pull.getLastEndpoint());
            replyEndpoint = config.reply().withPortOf(reply.getLastEndpoint());
            heartbeatEndpoint = config.heartbeat().withPortOf(heartbeat.getLastEndpoint());
            advertisedHeartbeat = heartbeatEndpoint.connectable();
            connections = new WorkerConnections(forwardContext, config.requestTimeout(), config.maxFrameBytes(),
                    secret);
            orchestrator = new Orchestrator(registry, connections, metrics);
            registry.onDeparture(orchestrator::forget);
            orchestration = Executors.newSingleThreadExecutor(r -> threads.platform("controller-orchestration", r));
            IngestHandler handler = new IngestHandler(index, registry, sync, metrics, lookup, orchestrator, orchestration,
                    config.caps().maxQueuedOrchestrations(), advertisedHeartbeat.toString());
            ZMQ.Poller poller = context.createPoller(3);
            poller.register(pull, ZMQ.Poller.POLLIN);
            poller.register(reply, ZMQ.Poller.POLLIN);
            poller.register(heartbeat, ZMQ.Poller.POLLIN);
            loop = new IngestLoop(poller, pull, reply, heartbeat, handler, registry, metrics);
            http = startHttp();
            threads.start("controller-ingest", loop);
            registerGauges();
            started = true;
        } catch (IOException e) {
            IOException failure = AddressInUseException.of(e, "http", "the HTTP API", config.http().host(), config.http().port());
            throw new UncheckedIOException(failure.getMessage(), failure);
        } finally {
            if (!started) {
                closeGate();
                context.close();
                forwardContext.close();
            }
        }
        LOG.log(System.Logger.Level.INFO, "controller: pull {0}, reply {1}, heartbeat {2} (advertised {3}), http {4}",
                pullEndpoint, replyEndpoint, heartbeatEndpoint, advertisedHeartbeat, httpEndpoint());
    }

    /**
     * The lookups' hasher. Without a seed its NONE_HASH is random, as LMCache's is: the controller says
     * so in its own words (what to pass), once, instead of the engine's generic warning.
     */
    private static ChunkHasher hasher(ControllerConfig config) {
        if (config.hashSeed().isPresent()) {
            return ChunkHasher.of(config.hashAlgorithm(), config.hashSeed());
        }
        LOG.log(System.Logger.Level.WARNING, "controller: no hash seed (--hash-seed, or PYTHONHASHSEED): lookups hash "
                + "with a random NONE_HASH and match no engine; give it the engines' hash_seed");
        return ChunkHasher.seeded(config.hashAlgorithm(), "random " + java.util.UUID.randomUUID()); // random, as unseeded is
    }

    /** {@code name} says which socket an {@link AddressInUseException} is about: pull, reply or heartbeat. */
    private ZMQ.Socket bind(SocketType type, String name, Endpoint at) {
        ZMQ.Socket s = context.createSocket(type);
        secret.ifPresent(k -> k.serve(s));
        if (gate != null) { // an engine without the secret: counted and logged by the gate
            guard.watch(context, s, gate.watcher("the controller's " + name + " socket"), CurveGate.WATCHED_EVENTS);
        } else {
            guard.watch(context, s);
        }
        s.setLinger(0);
        // Larger messages disconnect their sender; all together, messages being received hold at most the budget.
        receiveBudget.apply(s, config.maxFrameBytes());
        s.setRcvHWM(100_000);
        try {
            s.bind(at.bindAddress());
        } catch (org.zeromq.ZMQException e) {
            IOException failure = AddressInUseException.of(e, name, "the " + name + " socket (" + type + ")", at.host(), at.port());
            throw new UncheckedIOException(failure.getMessage(), failure);
        }
        return s;
    }

    private JsonHttpServer startHttp() throws IOException {
        JsonHttpServer server = JsonHttpServer.bind(new InetSocketAddress(config.http().host(), config.http().port()),
                config.httpThreads(), config.maxBodyBytes(), metrics::http);
        secret.ifPresent(k -> server.requireAuthorization(k::acceptsAuthorization));
        Map<String, Object> settings = new LinkedHashMap<>(config.hashingSettings());
        settings.put("worker_timeout_s", config.workerTimeout().toMillis() / 1000.0);
        new ControllerHttpApi(lookup, registry, index, metrics, settings, this::newEventId).routes(server);
        server.post("/clear", b -> outcome(orchestrator(() -> orchestrator.clear(eventId(b), b.string("instance_id"),
                b.string("location")))));
        server.post("/pin", b -> outcome(orchestrator(() -> orchestrator.pin(eventId(b), b.string("instance_id"),
                b.string("location"), b.tokens("tokens")))));
        server.post("/compress", b -> outcome(orchestrator(() -> orchestrator.compress(eventId(b), b.string("instance_id"),
                b.string("method"), b.string("location"), b.optionalTokens("tokens")))));
        server.post("/decompress", b -> outcome(orchestrator(() -> orchestrator.decompress(eventId(b), b.string("instance_id"),
                b.string("method"), b.string("location"), b.optionalTokens("tokens")))));
        server.post("/move", b -> {
            var from = b.pair("old_position");
            var to = b.pair("new_position");
            boolean copy = moveCopies(b);
            return outcome(orchestrator(() -> orchestrator.move(eventId(b), new Position(from.get(0), from.get(1)),
                    new Position(to.get(0), to.get(1)), b.optionalTokens("tokens"), copy)));
        });
        server.post("/health", b -> {
            Orchestrator.Health h = orchestrator(() -> orchestrator.health(eventId(b), b.string("instance_id")));
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("event_id", h.eventId());
            Map<String, Object> codes = new LinkedHashMap<>();
            h.errorCodes().forEach((w, c) -> codes.put(Integer.toString(w), (long) c));
            out.put("error_codes", codes);
            out.put("errors", h.errors());
            return out;
        });
        server.post("/check_finish", b -> {
            b.string("event_id");
            throw new BadRequestException(500, Orchestrator.CHECK_FINISH_UNSUPPORTED);
        });
        server.post("/query_instance", b -> {
            String ip = b.string("ip");
            String instance = orchestrator.instanceAt(ip).orElseThrow(() -> new BadRequestException(404,
                    "no registered worker at ip '" + ip + "'"));
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("event_id", eventId(b));
            out.put("res", instance);
            return out;
        });
        server.post("/query_worker_info", b -> {
            Optional<List<Integer>> ids = b.optionalIntegers("worker_ids");
            List<WorkerInfo> infos = orchestrator(() -> orchestrator.workerInfo(b.string("instance_id"), ids));
            List<Object> workers = new ArrayList<>();
            for (WorkerInfo w : infos) {
                Map<String, Object> one = new LinkedHashMap<>();
                one.put("instance_id", w.instanceId());
                one.put("worker_id", (long) w.workerId());
                one.put("ip", w.ip());
                one.put("port", (long) w.port());
                one.put("peer_init_url", w.peerInitUrl().orElse(null));
                one.put("registration_time", w.registrationTime());
                one.put("last_heartbeat_time", w.lastHeartbeatTime());
                workers.add(one);
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("event_id", eventId(b));
            out.put("worker_infos", workers);
            return out;
        });
        server.start();
        return server;
    }

    /** {@code should_copy} as LMCache's API names it (older LMCache: {@code copy}); false when absent, as there. */
    private static boolean moveCopies(JsonBody b) {
        Optional<Boolean> shouldCopy = b.optionalBoolean("should_copy");
        Optional<Boolean> copy = b.optionalBoolean("copy");
        if (shouldCopy.isPresent() && copy.isPresent() && !shouldCopy.equals(copy)) {
            throw new BadRequestException("\"should_copy\" and \"copy\" disagree; send one (LMCache's API reads should_copy)");
        }
        return shouldCopy.or(() -> copy).orElse(false);
    }

    private String eventId(JsonBody b) {
        return b.optionalString("event_id").orElseGet(this::newEventId);
    }

    private String newEventId() {
        return "ctl-" + ProcessHandle.current().pid() + "-" + eventIds.incrementAndGet();
    }

    private static <T> T orchestrator(Supplier<T> call) {
        try {
            return call.get();
        } catch (Orchestrator.UnknownInstanceException e) {
            throw new BadRequestException(404, e.getMessage());
        } catch (Orchestrator.NoPeerUrlException e) {
            throw new BadRequestException(400, e.getMessage());
        }
    }

    private static Object outcome(Orchestrator.Outcome o) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("event_id", o.eventId());
        out.put("num_tokens", o.numTokens());
        out.put("errors", o.errors());
        if (o.allFailed()) {
            throw new BadRequestException(502, "every worker failed: " + o.errors());
        }
        return out;
    }

    private void registerGauges() {
        metrics.gauge("lmcache4j_controller_index_entries", index::entries);
        metrics.gauge("lmcache4j_controller_index_locations", index::locations);
        metrics.counter("lmcache4j_controller_index_admits_refused_total", index::admitsRefused);
        metrics.counter("lmcache4j_controller_receive_budget_refused_total", receiveBudget::refused);
        metrics.gauge("lmcache4j_controller_receive_budget_held_bytes", receiveBudget::heldBytes);
        metrics.gauge("lmcache4j_controller_connections", () -> guard.counts().open());
        metrics.gauge("lmcache4j_controller_connections_handshaking", () -> guard.counts().handshaking());
        metrics.counter("lmcache4j_controller_connections_refused_total{limit=\"connections\"}",
                () -> guard.counts().refusedTotal());
        metrics.counter("lmcache4j_controller_connections_refused_total{limit=\"per_host\"}",
                () -> guard.counts().refusedPerHost());
        metrics.counter("lmcache4j_controller_connections_refused_total{limit=\"handshaking\"}",
                () -> guard.counts().refusedHandshaking());
        metrics.counter("lmcache4j_controller_handshake_timeouts_total", () -> guard.counts().timedOut());
        CurveGate g = gate;
        if (g != null) { // handshakes with a key that is not the deployment's
            metrics.counter("lmcache4j_controller_curve_handshakes_refused_total", g::refused);
        }
        metrics.gauge("lmcache4j_controller_index_bytes", index::memoryBytes);
        metrics.gauge("lmcache4j_controller_instances", () -> registry.workers().stream().map(w -> w.key().instanceId()).distinct().count());
        metrics.gauge("lmcache4j_controller_workers", () -> registry.workers().size());
        metrics.gauge("lmcache4j_controller_full_syncs_running", sync::running);
    }

    /** The budget its sockets reserve messages being received from (tests). */
    /** The sockets' connections, as the guard counts them (tests). */
    ConnectionGuard.Counts connections() {
        return guard.counts();
    }

    ReceiveBudget receiveBudget() {
        return receiveBudget;
    }

    /** The PULL socket's address (with the port it got). */
    public Endpoint pullEndpoint() {
        return pullEndpoint;
    }

    /** The reply ROUTER socket's address. */
    public Endpoint replyEndpoint() {
        return replyEndpoint;
    }

    /** The heartbeat ROUTER socket's address. */
    public Endpoint heartbeatEndpoint() {
        return heartbeatEndpoint;
    }

    /** The heartbeat address workers are told (a wildcard bind made connectable). */
    public Endpoint advertisedHeartbeat() {
        return advertisedHeartbeat;
    }

    /** The HTTP API's address. */
    public Endpoint httpEndpoint() {
        InetSocketAddress a = http.address();
        return new Endpoint(a.getAddress().getHostAddress(), a.getPort());
    }

    /**
     * The token the HTTP API requires ({@code Authorization: Bearer TOKEN}) when the controller has a
     * deployment secret: derived from it, as {@code ./lmcache4j controller --print-bearer} prints it; empty
     * without a secret (the API then takes anyone).
     */
    public Optional<String> httpBearerToken() {
        return secret.map(DeploymentSecret::bearerToken);
    }

    /** The index (tests read it; the benchmarks through {@link ControllerParts}). */
    ChunkIndex index() {
        return index;
    }

    /** The registry of workers (tests read it; the benchmarks through {@link ControllerParts}). */
    WorkerRegistry registry() {
        return registry;
    }

    /** The counters. */
    public ControllerMetrics metrics() {
        return metrics;
    }

    /** The lookup, in-process. */
    public ControllerLookup lookup() {
        return lookup;
    }

    /** The orchestration commands, in-process. */
    public Orchestrator orchestrator() {
        return orchestrator;
    }

    /** One line of counts, for the command's exit message. */
    public String describeCounts() {
        return String.format(Locale.ROOT, "%d index entries, %d workers, %d ops applied, %d malformed and %d unknown "
                        + "messages dropped", index.entries(), registry.workers().size(),
                metrics.total("lmcache4j_controller_ops_applied_total"),
                metrics.total("lmcache4j_controller_malformed_messages_total"),
                metrics.total("lmcache4j_controller_unknown_messages_total"));
    }

    /** Stops serving: HTTP first, then the ingestion thread, then every socket. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        http.close();
        try {
            loop.stop(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        orchestration.shutdownNow();
        orchestrator.close();
        connections.close();
        forwardContext.close();
        closeGate();
        context.close();
        threads.join(JOIN_BOUND);
    }

    private void closeGate() {
        if (gate != null) {
            gate.close(); // its thread closes its own socket, before the context closes the rest
        }
    }

    /** The effective configuration. */
    public ControllerConfig config() {
        return config;
    }

}
