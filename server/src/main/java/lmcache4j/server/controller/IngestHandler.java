package lmcache4j.server.controller;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.controller.message.HeartbeatCommand;
import lmcache4j.engine.controller.message.KVBatchDecoder;
import lmcache4j.engine.controller.message.KVOpEvent;
import lmcache4j.engine.controller.message.MalformedMessageException;
import lmcache4j.engine.controller.message.OpType;
import lmcache4j.engine.controller.message.OrchMsg;
import lmcache4j.engine.controller.message.OrchRetMsg;
import lmcache4j.engine.controller.message.UnknownMessageTypeException;
import lmcache4j.engine.controller.message.WorkerMsg;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.controller.message.WorkerReqRetMsg;
import lmcache4j.server.controller.ControllerMetrics.Socket;
import lmcache4j.server.controller.index.ChunkIndex;
import lmcache4j.server.controller.index.Holder;
import lmcache4j.server.controller.index.IndexLimitException;
import lmcache4j.server.controller.registry.FullSyncTracker;
import lmcache4j.server.controller.registry.WorkerInfo;
import lmcache4j.server.controller.registry.WorkerKey;
import lmcache4j.server.controller.registry.WorkerRegistry;

/**
 * What the controller does with each frame its three bound sockets receive; called only from the
 * ingestion thread, which makes it the index's single writer. Every frame is decoded on its own:
 * a malformed or unknown one is counted and dropped (ROUTER sockets answer it with an
 * {@link ErrorMsg}), and the next frame is served as if nothing happened.
 */
final class IngestHandler {
    private static final System.Logger LOG = System.getLogger(IngestHandler.class.getName());

    private final ChunkIndex index;
    private final WorkerRegistry registry;
    private final FullSyncTracker sync;
    private final ControllerMetrics metrics;
    private final ControllerLookup lookup;
    private final Orchestrator orchestrator;
    private final Executor orchestration;
    private final int maxQueuedOrchestrations;
    /** Fire-and-forget orchestration messages handed to the orchestration thread and not yet done. */
    private final AtomicInteger queuedOrchestrations = new AtomicInteger();
    private final String heartbeatUrl;
    private final RateLimitedWarning badFrames = new RateLimitedWarning(LOG, 10_000);
    /** The hot path: batched admits/evicts and full-sync batches straight into primitive arrays. */
    private final KVBatchDecoder batches = new KVBatchDecoder();
    /** The last holder built, reused while frames keep naming it (the decoder reuses its strings). */
    private Holder lastHolder;

    private static final String BATCHED_KV_OPERATION_MSG = "BatchedKVOperationMsg";
    private static final String FULL_SYNC_BATCH_MSG = "FullSyncBatchMsg";

    IngestHandler(ChunkIndex index, WorkerRegistry registry, FullSyncTracker sync, ControllerMetrics metrics,
                  ControllerLookup lookup, Orchestrator orchestrator, Executor orchestration, int maxQueuedOrchestrations,
                  String heartbeatUrl) {
        this.index = Objects.requireNonNull(index);
        this.registry = Objects.requireNonNull(registry);
        this.sync = Objects.requireNonNull(sync);
        this.metrics = Objects.requireNonNull(metrics);
        this.lookup = Objects.requireNonNull(lookup);
        this.orchestrator = Objects.requireNonNull(orchestrator);
        this.orchestration = Objects.requireNonNull(orchestration);
        this.maxQueuedOrchestrations = maxQueuedOrchestrations;
        this.heartbeatUrl = Objects.requireNonNull(heartbeatUrl);
    }

    /** One frame from the PULL socket: a worker's push, or an orchestrator's fire-and-forget message. */
    void onPull(byte[] frame) {
        switch (batches.decode(frame)) {
            case BATCHED_KV_OPERATIONS -> {
                metrics.message(Socket.PULL, BATCHED_KV_OPERATION_MSG);
                applyDecodedOps();
                return;
            }
            case FULL_SYNC_BATCH -> {
                metrics.message(Socket.PULL, FULL_SYNC_BATCH_MSG);
                WorkerKey w = new WorkerKey(batches.instanceId(), batches.workerId());
                if (!registry.isRegistered(w) || !syncBatch(w, batches.location(), batches.syncId(), batches.batchId(),
                        batches.keys(), batches.count())) {
                    metrics.opsDiscarded("no_sync", batches.count());
                }
                return;
            }
            case OTHER -> {
                // every other message, and any frame the fast path does not take whole: the codec decides
            }
        }
        ControllerMessage m = decode(Socket.PULL, frame);
        if (m == null) {
            return;
        }
        switch (m) {
            case WorkerMsg.BatchedKVOperationMsg b -> apply(b);
            case WorkerMsg.KVAdmitMsg a -> applyOne(a.instanceId(), a.workerId(), a.location(), OpType.ADMIT, a.key());
            case WorkerMsg.KVEvictMsg e -> applyOne(e.instanceId(), e.workerId(), e.location(), OpType.EVICT, e.key());
            case WorkerMsg.FullSyncBatchMsg f -> {
                WorkerKey w = new WorkerKey(f.instanceId(), f.workerId());
                if (!registry.isRegistered(w) || !syncBatch(w, f.location(), f.syncId(), f.batchId(), f.keys(), f.keys().length)) {
                    metrics.opsDiscarded("no_sync", f.keys().length);
                }
            }
            case WorkerMsg.FullSyncEndMsg e -> {
                if (!sync.end(new WorkerKey(e.instanceId(), e.workerId()), e.location(), e.syncId(), e.actualTotalKeys())) {
                    metrics.opsDiscarded("no_sync", 0);
                }
            }
            case WorkerMsg.DeRegisterMsg d -> {
                if (registry.deregister(new WorkerKey(d.instanceId(), d.workerId()), d.ip(), d.port()) < 0) {
                    metrics.refused("identity");
                }
            }
            case OrchMsg o -> queueOrchestration(o);
            default -> metrics.unknown(Socket.PULL); // a well-formed message that is not pushed (a reply, a request)
        }
    }

    /** One request from the reply ROUTER socket; returns the encoded answer. */
    byte[] onRequest(byte[] payload) {
        ControllerMessage m = decode(Socket.REPLY, payload);
        if (m == null) {
            return Wire.encode(new ErrorMsg("malformed or unknown message"));
        }
        ControllerMessage reply = switch (m) {
            case WorkerReqMsg.RegisterMsg r -> {
                yield switch (registry.register(new WorkerKey(r.instanceId(), r.workerId()), r.ip(), r.port(), r.peerInitUrl())) {
                    case FULL -> workersFull();
                    case TAKEN -> identityTaken(r.instanceId(), r.workerId());
                    case NEW, KNOWN -> new WorkerReqRetMsg.RegisterRetMsg(Map.of("heartbeat_url", heartbeatUrl));
                };
            }
            case WorkerReqMsg.HeartbeatMsg h -> heartbeat(h);
            case WorkerReqMsg.FullSyncStartMsg s -> {
                WorkerKey w = new WorkerKey(s.instanceId(), s.workerId());
                if (!registry.isRegistered(w)) {
                    yield new WorkerReqRetMsg.FullSyncStartRetMsg(s.syncId(), false, Optional.of("worker " + w
                            + " is not registered; register (or heartbeat) first"));
                }
                Optional<String> refused = sync.start(w, s.location(), s.syncId(), s.totalKeys(), s.batchCount());
                yield new WorkerReqRetMsg.FullSyncStartRetMsg(s.syncId(), refused.isEmpty(), refused);
            }
            case WorkerReqMsg.FullSyncStatusMsg s -> {
                FullSyncTracker.Status st = sync.status(new WorkerKey(s.instanceId(), s.workerId()), s.syncId());
                yield new WorkerReqRetMsg.FullSyncStatusRetMsg(st.syncId(), st.isComplete(), st.globalProgress(),
                        st.canExitFreeze(), st.missingBatches().stream().mapToLong(Long::longValue).toArray());
            }
            case WorkerReqMsg.BatchedP2PLookupMsg p -> p2pLookup(p);
            case OrchMsg.LookupMsg l -> lookupReply(l);
            case OrchMsg.QueryInstMsg q -> new OrchRetMsg.QueryInstRetMsg(q.eventId(), orchestrator.instanceAt(q.ip()));
            case OrchMsg.QueryWorkerInfoMsg q -> queryWorkerInfo(q);
            case OrchMsg.CheckFinishMsg c -> new ErrorMsg(Orchestrator.CHECK_FINISH_UNSUPPORTED);
            default -> {
                metrics.unknown(Socket.REPLY);
                yield new ErrorMsg(Wire.typeName(m) + " is not served on the controller's reply socket");
            }
        };
        return Wire.encode(reply);
    }

    /** One request from the heartbeat ROUTER socket; returns the encoded answer. */
    byte[] onHeartbeat(byte[] payload) {
        ControllerMessage m = decode(Socket.HEARTBEAT, payload);
        if (m == null) {
            return Wire.encode(new ErrorMsg("malformed or unknown message"));
        }
        if (m instanceof WorkerReqMsg.HeartbeatMsg h) {
            return Wire.encode(heartbeat(h));
        }
        metrics.unknown(Socket.HEARTBEAT);
        return Wire.encode(new ErrorMsg(Wire.typeName(m) + " is not served on the controller's heartbeat socket"));
    }

    /** A frame with a bad envelope (ROUTER: not identity, empty, payload). */
    void malformedEnvelope(Socket socket) {
        metrics.malformed(socket);
    }

    /**
     * A heartbeat: a worker the controller does not know (it restarted) is registered and asked for
     * a full sync, again in every reply until it starts one (a reply can be lost: see FullSyncTracker).
     */
    private ControllerMessage heartbeat(WorkerReqMsg.HeartbeatMsg h) {
        WorkerKey w = new WorkerKey(h.instanceId(), h.workerId());
        return switch (registry.heartbeat(w, h.ip(), h.port(), h.peerInitUrl())) {
            case NEW -> {
                sync.request(w);
                yield fullSyncAsked();
            }
            case KNOWN -> sync.requested(w) ? fullSyncAsked() : new WorkerReqRetMsg.HeartbeatRetMsg(List.of());
            case FULL -> workersFull();
            case TAKEN -> identityTaken(h.instanceId(), h.workerId());
        };
    }

    private static WorkerReqRetMsg.HeartbeatRetMsg fullSyncAsked() {
        return new WorkerReqRetMsg.HeartbeatRetMsg(List.of(HeartbeatCommand.FullSyncCommand.because("worker_re_registered")));
    }

    private ErrorMsg identityTaken(String instanceId, int workerId) {
        metrics.refused("identity");
        return new ErrorMsg("worker " + instanceId + "/" + workerId + " is registered at another address; it keeps its "
                + "identity until it deregisters or misses heartbeats for the worker timeout");
    }

    private ErrorMsg workersFull() {
        metrics.refused("workers");
        badFrames.warn(() -> "refused a worker: the controller holds its maximum of " + registry.maxWorkers()
                + " workers (--max-workers)");
        return new ErrorMsg("the controller holds its maximum of " + registry.maxWorkers() + " workers; try again "
                + "when one leaves");
    }

    /** Hands a fire-and-forget message to the orchestration thread, unless {@code maxQueuedOrchestrations} wait. */
    private void queueOrchestration(OrchMsg o) {
        if (queuedOrchestrations.incrementAndGet() > maxQueuedOrchestrations) {
            queuedOrchestrations.decrementAndGet();
            metrics.refused("orchestrations");
            badFrames.warn(() -> "dropped a " + Wire.typeName(o) + ": " + maxQueuedOrchestrations
                    + " orchestration messages are already waiting (--max-queued-orchestrations)");
            return;
        }
        try {
            orchestration.execute(() -> {
                try {
                    fireAndForget(o);
                } finally {
                    queuedOrchestrations.decrementAndGet();
                }
            });
        } catch (RejectedExecutionException e) { // closing
            queuedOrchestrations.decrementAndGet();
        }
    }

    private ControllerMessage decode(Socket socket, byte[] frame) {
        try {
            ControllerMessage m = Wire.decode(frame);
            metrics.message(socket, Wire.typeName(m));
            return m;
        } catch (UnknownMessageTypeException e) {
            metrics.unknown(socket);
            badFrames.warn(() -> "dropped a message of unknown type on the " + socket.label() + " socket: " + e.getMessage());
        } catch (MalformedMessageException e) {
            metrics.malformed(socket);
            badFrames.warn(() -> "dropped a malformed frame (" + frame.length + " bytes) on the " + socket.label()
                    + " socket: " + e.getMessage());
        } catch (RuntimeException e) { // a codec bug must not stop ingestion either
            metrics.malformed(socket);
            badFrames.warn(() -> "the codec failed on a frame of " + frame.length + " bytes on the " + socket.label()
                    + " socket: " + e);
        }
        return null;
    }

    private void apply(WorkerMsg.BatchedKVOperationMsg b) {
        List<KVOpEvent> ops = b.operations();
        WorkerKey w = new WorkerKey(b.instanceId(), b.workerId());
        if (!admissible(w, b.location(), ops.size())) {
            return;
        }
        try (ChunkIndex.Batch batch = index.batch()) {
            int h = batch.holder(new Holder(b.instanceId(), b.workerId(), b.location()));
            for (int i = 0, n = ops.size(); i < n; i++) {
                KVOpEvent op = ops.get(i);
                if (op.opType() == OpType.ADMIT) {
                    batch.admit(h, op.key());
                } else {
                    batch.evict(h, op.key());
                }
            }
        } catch (IndexLimitException e) {
            metrics.opsDiscarded("limit", ops.size());
            badFrames.warn(() -> "index limit: " + e.getMessage());
            return;
        }
        metrics.opsApplied(ops.size());
    }

    /** {@link #apply} for a frame the {@link KVBatchDecoder} took: the same checks and counts. */
    private void applyDecodedOps() {
        int n = batches.count();
        String instanceId = batches.instanceId();
        int workerId = batches.workerId();
        String location = batches.location();
        if (!admissible(new WorkerKey(instanceId, workerId), location, n)) {
            return;
        }
        byte[] types = batches.opTypes();
        long[] keys = batches.keys();
        try (ChunkIndex.Batch batch = index.batch()) {
            int h = batch.holder(holder(instanceId, workerId, location));
            batch.touch(keys, n);
            for (int i = 0; i < n; i++) {
                if (types[i] == KVBatchDecoder.ADMIT) {
                    batch.admit(h, keys[i]);
                } else {
                    batch.evict(h, keys[i]);
                }
            }
        } catch (IndexLimitException e) {
            metrics.opsDiscarded("limit", n);
            badFrames.warn(() -> "index limit: " + e.getMessage());
            return;
        }
        metrics.opsApplied(n);
    }

    private Holder holder(String instanceId, int workerId, String location) {
        Holder h = lastHolder;
        if (h == null || h.instanceId() != instanceId || h.workerId() != workerId || h.location() != location) {
            h = new Holder(instanceId, workerId, location);
            lastHolder = h;
        }
        return h;
    }

    private void applyOne(String instanceId, int workerId, String location, OpType op, long key) {
        WorkerKey w = new WorkerKey(instanceId, workerId);
        if (!admissible(w, location, 1)) {
            return;
        }
        try (ChunkIndex.Batch batch = index.batch()) {
            int h = batch.holder(new Holder(instanceId, workerId, location));
            if (op == OpType.ADMIT) {
                batch.admit(h, key);
            } else {
                batch.evict(h, key);
            }
        } catch (IndexLimitException e) {
            metrics.opsDiscarded("limit", 1);
            return;
        }
        metrics.opsApplied(1);
    }

    /** Only registered workers not in a full sync of that location are indexed. */
    private boolean admissible(WorkerKey w, String location, int ops) {
        if (!registry.isRegistered(w)) {
            metrics.opsDiscarded("unregistered", ops);
            return false;
        }
        if (sync.isSyncing(w, location)) {
            metrics.opsDiscarded("syncing", ops);
            return false;
        }
        return true;
    }

    private boolean syncBatch(WorkerKey w, String location, String syncId, long batchId, long[] keys, int n) {
        try {
            return sync.batch(w, location, syncId, batchId, keys, n);
        } catch (IndexLimitException e) {
            metrics.opsDiscarded("limit", n);
            return true;
        }
    }

    private WorkerReqRetMsg p2pLookup(WorkerReqMsg.BatchedP2PLookupMsg p) {
        ChunkIndex.PrefixMatch m = index.longestPrefixes(p.hashes(), p.hashes().length);
        List<WorkerReqRetMsg.P2PHolder> holders = new ArrayList<>();
        for (ChunkIndex.InstanceHit hit : m.hits()) {
            if (hit.instanceId().equals(p.instanceId())) {
                continue; // a peer lookup asks for OTHER instances' chunks
            }
            Optional<WorkerInfo> peer = registry.workersOf(hit.instanceId()).stream()
                    .filter(w -> w.key().workerId() == p.workerId()).findFirst();
            holders.add(new WorkerReqRetMsg.P2PHolder(hit.instanceId(), hit.location(), hit.chunks(),
                    peer.flatMap(WorkerInfo::peerInitUrl).orElse("")));
        }
        holders.sort((a, b) -> Long.compare(b.numHitChunks(), a.numHitChunks()));
        return new WorkerReqRetMsg.BatchedP2PLookupRetMsg(holders);
    }

    private ControllerMessage queryWorkerInfo(OrchMsg.QueryWorkerInfoMsg q) {
        try {
            return new OrchRetMsg.QueryWorkerInfoRetMsg(q.eventId(), orchestrator.workerInfo(q.instanceId(), q.workerIds()));
        } catch (Orchestrator.UnknownInstanceException e) {
            return new ErrorMsg(e.getMessage());
        }
    }

    private OrchRetMsg lookupReply(OrchMsg.LookupMsg l) {
        ControllerLookup.Answer a = lookup.lookup(l.tokens());
        Map<String, OrchRetMsg.Layout> layout = new LinkedHashMap<>();
        a.layout().forEach((instance, x) -> layout.put(instance, new OrchRetMsg.Layout(x.location(), x.tokens())));
        return new OrchRetMsg.LookupRetMsg(l.eventId(), layout);
    }

    /** An orchestrator's message on the PULL socket: done, with nowhere to send the answer but the log. */
    private void fireAndForget(OrchMsg o) {
        try {
            Object result = switch (o) {
                case OrchMsg.ClearMsg c -> orchestrator.clear(c.eventId(), c.instanceId(), c.location());
                case OrchMsg.PinMsg p -> orchestrator.pin(p.eventId(), p.instanceId(), p.location(), p.tokens());
                case OrchMsg.CompressMsg c -> orchestrator.compress(c.eventId(), c.instanceId(), c.method(), c.location(), c.tokens());
                case OrchMsg.DecompressMsg d -> orchestrator.decompress(d.eventId(), d.instanceId(), d.method(), d.location(),
                        d.tokens());
                case OrchMsg.MoveMsg mv -> orchestrator.move(mv.eventId(), mv.oldPosition(), mv.newPosition(), mv.tokens(),
                        mv.copy().orElse(false));
                case OrchMsg.HealthMsg h -> orchestrator.health(h.eventId(), h.instanceId());
                case OrchMsg.CheckFinishMsg c -> Orchestrator.CHECK_FINISH_UNSUPPORTED;
                case OrchMsg.LookupMsg l -> lookup.lookup(l.tokens());
                case OrchMsg.QueryInstMsg q -> orchestrator.instanceAt(q.ip());
                default -> {
                    metrics.unknown(Socket.PULL);
                    yield Wire.typeName(o) + " is not supported";
                }
            };
            LOG.log(System.Logger.Level.DEBUG, "{0} from the PULL socket: {1}", Wire.typeName(o), result);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.INFO, "{0} from the PULL socket failed: {1}", Wire.typeName(o), e.getMessage());
        }
    }
}
