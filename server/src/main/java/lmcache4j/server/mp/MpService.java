package lmcache4j.server.mp;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.host.SharedMemoryArena;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.store.MpStoreOptions;
import lmcache4j.server.mp.store.MpStoreStats;
import lmcache4j.server.mp.store.ObjectLayout;
import lmcache4j.server.mp.store.Slot;
import lmcache4j.server.mp.store.WriteReservation;
import lmcache4j.server.mp.tier.MpLowerTiers;
import lmcache4j.server.mp.wire.IpcCacheServerKey;
import lmcache4j.server.mp.wire.MpDropReason;
import lmcache4j.server.mp.wire.MpFrames;
import lmcache4j.server.mp.wire.MpHashChain;
import lmcache4j.server.mp.wire.MpKeyCodec;
import lmcache4j.server.mp.wire.MpKeyExpansion;
import lmcache4j.server.mp.wire.MpObjectKey;
import lmcache4j.server.mp.wire.MpOperation;
import lmcache4j.server.mp.wire.MpProtocolException;
import lmcache4j.server.mp.wire.MpRegistrationCodec;
import lmcache4j.server.mp.wire.MpRequest;
import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpTransferCodec;
import lmcache4j.server.mp.wire.PrepareRetrieveResponse;
import lmcache4j.server.mp.wire.PrepareStoreResponse;
import lmcache4j.server.mp.wire.RegisterEngineDrivenContextPayload;
import lmcache4j.server.mp.wire.RegisterEngineDrivenContextResponse;
import lmcache4j.server.mp.wire.ShmSlot;
import lmcache4j.server.mp.wire.TransferContext;

/**
 * The operations of LMCache's MP protocol over the shared-memory store: registration of
 * engine-driven workers, prepare/commit of stores and retrieves, lookups with their read locks
 * and prefetch counts, sessions, clear. Confined to the server's loop thread (the store itself is
 * thread-safe). Every failure is a dropped request, counted by reason: LMCache's protocol has no
 * error reply.
 */
final class MpService implements AutoCloseable {
    /** The LMCache commit whose {@code wire.py} (op ids, op encoding) this server speaks. */
    static final String LMCACHE_WIRE_COMMIT = "0be164ed091d95c19a6a1f37005609d33dae7efe";
    private static final System.Logger LOG = System.getLogger(MpService.class.getName());
    private static final String ENGINE_DRIVEN_ONLY = "this server serves only the engine-driven transfer; start vLLM with"
            + " LMCACHE_MP_TRANSFER_MODE=engine_driven (or kv_transfer_config extra lmcache.mp.mp_transfer_mode:"
            + " engine_driven)";

    /** A reply: uid and op as received, and the result frame, or null when the result is None. */
    record Reply(byte[] uid, byte[] op, byte[] result) {
    }

    /** A reply that waited (a {@code wait_prefetch_status} for a load from L2), with its client's identity. */
    record Deferred(byte[] identity, Reply reply) {
    }

    /** A {@code wait_prefetch_status} waiting for its session's load to end, or for its timeout. */
    private record Waiter(String requestId, byte[] identity, byte[] uid, byte[] op, long deadline) {
    }

    /** What a request id holds: its hash chain, its last lookup, and that lookup's count until read. */
    static final class Session {
        final MpHashChain chain;
        /** The last lookup's chunk-major, rank-minor object keys, and how many leading chunks it locked. */
        List<MpObjectKey> lookupKeys = List.of();
        int lookupRanks = 1;
        int lookupFirstChunk;
        int lookupHits;
        /** The count {@code query_prefetch_status} has yet to return (once), or -1. */
        int unreadHits = -1;
        /** Whether the last lookup's load from the lower tiers is still running (its count unknown). */
        boolean loading;
        /** Which lookup the running load belongs to: a later lookup of the same request makes it stale. */
        int generation;

        Session(int chunkSize) {
            chain = new MpHashChain(chunkSize);
        }
    }

    /** A prepared transfer, by the instance and the object keys it covers. */
    private record Pending(long instanceId, List<MpObjectKey> keys) {
    }

    private record PendingWrite(WriteReservation reservation, long sinceNanos) {
    }

    private final MpServerSettings settings;
    private final MpObjectStore store;
    private final MpInstances instances;
    private final MpSessions<Session> sessions;
    private final MpQuotas quotas;
    /** Sessions whose lookup count has not been read yet, or is still loading (LMCache's active prefetch jobs). */
    private int unreadJobs;
    /** The lower tiers, when configured. */
    private final Optional<MpLowerTiers> l2;
    /** Ends of loads from L2, posted by their threads, run on the loop thread ({@link #runCompletions}). */
    private final ConcurrentLinkedQueue<Runnable> completions = new ConcurrentLinkedQueue<>();
    /** Wakes the loop thread, so a load's end is answered at once (set by the server). */
    private volatile Runnable wakeLoop = () -> { };
    private final List<Waiter> waiters = new ArrayList<>();
    /**
     * Parked waits at most: LMCache's scheduler parks one per request, and at most
     * {@link MpLowerTiers#MAX_JOBS} requests load at once; more are answered at once. Also under
     * ZeroMQ's default send high-water mark (1,000), so the replies released together all go out.
     */
    static final int MAX_WAITERS = 256;
    private final List<Deferred> deferred = new ArrayList<>();
    private final Map<Pending, PendingWrite> pendingWrites = new HashMap<>();
    private final MpPendingReads pendingReads;
    private final Map<String, Long> requests = new TreeMap<>();
    private final Map<String, Long> dropped = new TreeMap<>();
    private final Set<MpOperation> refusalLogged = EnumSet.noneOf(MpOperation.class);
    private final Map<String, Long> refused = new TreeMap<>();
    /** What the operator must change, once a CUDA worker (LMCache-driven transfer) has been refused; else empty. */
    private String refusal = "";
    /** When each drop reason was last logged: at most once per reason every 5 s. */
    private final Map<String, Long> lastDropLog = new HashMap<>();

    private MpService(MpServerSettings settings, MpObjectStore store, Optional<MpLowerTiers> l2) {
        this.settings = settings;
        this.store = store;
        this.l2 = l2;
        this.instances = new MpInstances(settings.maxInstances());
        this.quotas = new MpQuotas(store);
        // Prepared retrieves hold their keys until committed: sixteen longest prompts' worth in all.
        this.pendingReads = new MpPendingReads(16L * Math.max(1, settings.maxTokens() / settings.chunkSize()));
        // A session weighs its tokens (its hash chain adds 32 bytes per chunk): four longest prompts in all.
        this.sessions = new MpSessions<>(settings.maxSessions(), 4L * settings.maxTokens(), settings.sessionTtl().toNanos(),
                this::forgetJob);
    }

    /** Creates the shared-memory pool and the store over it. */
    static MpService open(MpServerSettings settings) throws IOException {
        SharedMemoryArena arena;
        try {
            arena = SharedMemoryArena.create(settings.shmName(), settings.poolBytes());
        } catch (RuntimeException e) {
            throw new IOException("cannot create the MP server's shared-memory pool /dev/shm/" + settings.shmName() + " of "
                    + settings.poolBytes() + " bytes: " + e.getMessage(), e);
        }
        try {
            MpStoreOptions options = MpStoreOptions.DEFAULT.withReadLockTtl(settings.lockTtl())
                    .withWriteTtl(settings.lockTtl());
            MpObjectStore store = new MpObjectStore(arena, options, System::nanoTime);
            try {
                return new MpService(settings, store, MpLowerTiers.open(settings.l2(), store));
            } catch (IOException | RuntimeException e) {
                store.close();
                throw e;
            }
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    // ---- dispatch -----------------------------------------------------------------------------

    /** Serves one request ({@code [identity, uid, op, args...]}); null when it is dropped. */
    Reply handle(List<byte[]> frames, long now) {
        MpRequest request;
        try {
            request = MpFrames.parse(frames);
        } catch (MpProtocolException e) {
            drop(e.reason().label(), e.getMessage());
            return null;
        }
        MpOperation op = request.operation();
        count(requests, op.wireName());
        if (!op.served()) {
            drop(MpDropReason.REFUSED_OP.label(), null);
            count(refused, op.wireName());
            if (op.id() <= 7) {
                refusal = "a worker sent " + op.wireName() + " (LMCache's CUDA transfer); " + ENGINE_DRIVEN_ONLY;
            }
            if (refusalLogged.add(op)) {
                LOG.log(System.Logger.Level.WARNING, "MP server: refused " + op.wireName() + " (op " + op.id() + "): "
                        + (op.id() <= 7 ? ENGINE_DRIVEN_ONLY : "lmcache4j does not serve blend, P2P, experimental or"
                        + " KV-event operations") + ". Requests of this kind are dropped without a reply.");
            }
            return null;
        }
        try {
            if (request.operation() == MpOperation.WAIT_PREFETCH_STATUS && waitFor(request, now)) {
                return null; // answered when the session's load ends or the timeout passes
            }
            return new Reply(request.uidFrame(), request.opFrame(), serve(request, now).orElse(null));
        } catch (MpProtocolException e) {
            drop(e.reason().label(), op.wireName() + ": " + e.getMessage());
            return null;
        }
    }

    /** A request of too many frames, refused unread. */
    Reply refuse(String reason, List<byte[]> frames) {
        drop(reason, frames.size() + "+ frames");
        return null;
    }

    private Optional<byte[]> serve(MpRequest r, long now) throws MpProtocolException {
        return switch (r.operation()) {
            case GET_CHUNK_SIZE -> Optional.of(MpScalars.encodeInt(settings.chunkSize()));
            case NOOP -> Optional.of(MpScalars.encodeString("OK"));
            case PING -> {
                MpScalars.decodeOptionalInt(r.arg(0), "instance_id", Long.MIN_VALUE, Long.MAX_VALUE)
                        .ifPresent(id -> instances.touch(id, now));
                yield Optional.of(MpScalars.encodeBool(true));
            }
            case CLEAR -> {
                clear(!r.args().isEmpty() && MpScalars.decodeBool(r.arg(0), "force"));
                yield Optional.empty();
            }
            case REGISTER_KV_CACHE_ENGINE_DRIVEN_CONTEXT -> Optional.of(MpRegistrationCodec.encodeResponse(
                    register(MpRegistrationCodec.decodePayload(r.arg(0)), now)));
            case UNREGISTER_KV_CACHE_ENGINE_DRIVEN_CONTEXT -> {
                unregister(MpScalars.decodeInt(r.arg(0), "instance_id", Long.MIN_VALUE, Long.MAX_VALUE));
                yield Optional.empty();
            }
            case PREPARE_STORE -> Optional.of(prepareStore(key(r, 0), instanceId(r, 1), now));
            case COMMIT_STORE -> Optional.of(MpScalars.encodeBool(commitStore(key(r, 0), instanceId(r, 1),
                    MpScalars.decodeBytes(r.arg(2), "data", settings.maxMessageBytes()), now)));
            case PREPARE_RETRIEVE -> Optional.of(prepareRetrieve(key(r, 0), instanceId(r, 1), now));
            case COMMIT_RETRIEVE -> {
                commitRetrieve(key(r, 0), instanceId(r, 1), now);
                yield Optional.of(MpScalars.encodeBool(true));
            }
            case LOOKUP -> {
                lookup(key(r, 0), (int) MpScalars.decodeInt(r.arg(1), "tp_size", 1, IpcCacheServerKey.MAX_WORLD_SIZE), now);
                yield Optional.empty();
            }
            case QUERY_PREFETCH_STATUS, WAIT_PREFETCH_STATUS -> readPrefetch(requestId(r), now, true).map(MpScalars::encodeInt);
            case QUERY_PREFETCH_LOOKUP_HITS -> readPrefetch(requestId(r), now, false).map(MpScalars::encodeInt);
            case FREE_LOOKUP_LOCKS -> {
                MpScalars.decodeInt(r.arg(1), "tp_size", 1, IpcCacheServerKey.MAX_WORLD_SIZE);
                freeLookupLocks(key(r, 0), now);
                yield Optional.empty();
            }
            case END_SESSION -> {
                if (r.args().size() > 1) {
                    MpScalars.checkWellFormed(r.arg(1), "end_info"); // a newer client's extra: accepted, ignored
                }
                endSession(requestId(r));
                yield Optional.empty();
            }
            case REPORT_BLOCK_ALLOCATION -> {
                for (byte[] arg : r.args()) {
                    MpScalars.checkWellFormed(arg, "report_block_allocation argument"); // observability only
                }
                yield Optional.empty();
            }
            default -> throw new MpProtocolException(MpDropReason.REFUSED_OP, "not served");
        };
    }

    private IpcCacheServerKey key(MpRequest r, int index) throws MpProtocolException {
        return MpKeyCodec.decode(r.arg(index), settings.maxTokens());
    }

    private static long instanceId(MpRequest r, int index) throws MpProtocolException {
        return MpScalars.decodeInt(r.arg(index), "instance_id", Long.MIN_VALUE, Long.MAX_VALUE);
    }

    private static String requestId(MpRequest r) throws MpProtocolException {
        return MpScalars.decodeString(r.arg(0), "request_id", MpKeyCodec.MAX_STRING_BYTES);
    }

    // ---- registration -------------------------------------------------------------------------

    private RegisterEngineDrivenContextResponse register(RegisterEngineDrivenContextPayload p, long now) {
        Optional<String> refusal = p.refusal();
        if (refusal.isPresent()) {
            return RegisterEngineDrivenContextResponse.rejected(refusal.get());
        }
        DType dtype;
        try {
            dtype = DType.fromTorchName(p.dtypeStr());
        } catch (IllegalArgumentException e) {
            return RegisterEngineDrivenContextResponse.rejected("unknown dtype_str '" + p.dtypeStr() + "'");
        }
        if (p.numLayers() < 1 || p.hiddenDimSize() < 1 || p.hiddenDimSize() > Integer.MAX_VALUE || p.worldSize() < 1
                || p.worldSize() > IpcCacheServerKey.MAX_WORLD_SIZE || p.modelName().indexOf('@') >= 0) {
            return RegisterEngineDrivenContextResponse.rejected("num_layers, hidden_dim_size and world_size must be"
                    + " positive (world_size at most 255) and model_name without '@'");
        }
        int hidden = (int) p.hiddenDimSize();
        ObjectLayout layout = p.useMla() ? ObjectLayout.mla(p.numLayers(), settings.chunkSize(), hidden, dtype)
                : ObjectLayout.kv(p.numLayers(), settings.chunkSize(), hidden, dtype);
        if (layout.byteLength() > settings.poolBytes()) {
            return RegisterEngineDrivenContextResponse.rejected("one chunk of this layout is " + layout.byteLength()
                    + " bytes, more than the whole pool (" + settings.poolBytes() + " bytes; --l1-size)");
        }
        Optional<String> error = instances.register(new MpInstances.Instance(p.instanceId(), p.modelName(), p.worldSize(),
                layout, p.useMla(), p.blockSize()), now);
        return error.map(RegisterEngineDrivenContextResponse::rejected)
                .orElseGet(() -> RegisterEngineDrivenContextResponse.accepted(settings.shmName(), settings.poolBytes()));
    }

    /** Drops the instance: its pending writes are never published, its pending reads are released. */
    private void unregister(long instanceId) {
        store.abortAll(owner(instanceId));
        pendingWrites.keySet().removeIf(p -> p.instanceId() == instanceId);
        pendingReads.removeInstance(instanceId, store::releaseRead);
        instances.unregister(instanceId);
    }

    private static String owner(long instanceId) {
        return Long.toString(instanceId);
    }

    private MpInstances.Instance registered(long instanceId, long now) throws MpProtocolException {
        return instances.touch(instanceId, now).orElseThrow(() -> new MpProtocolException(MpDropReason.BAD_ARGUMENT,
                "instance " + instanceId + " is not registered (register_kv_cache_engine_driven_context first;"
                        + " after a server restart a worker must register again)"));
    }

    // ---- store and retrieve -------------------------------------------------------------------

    /** The key's object keys, hashed with its session's chain. */
    private List<MpObjectKey> objectKeys(IpcCacheServerKey key, long now) throws MpProtocolException {
        Session s = sessions.getOrCreate(key.requestId(), now, id -> new Session(settings.chunkSize()));
        List<MpObjectKey> keys = MpKeyExpansion.objectKeys(key, s.chain);
        sessions.weigh(key.requestId(), key.tokenIds().length);
        return keys;
    }

    private byte[] prepareStore(IpcCacheServerKey key, long instanceId, long now) throws MpProtocolException {
        MpInstances.Instance instance = registered(instanceId, now);
        requireWorker(key, instance);
        List<MpObjectKey> keys = objectKeys(key, now);
        Pending pending = new Pending(instanceId, keys);
        PendingWrite earlier = pendingWrites.remove(pending);
        if (earlier != null) {
            store.abortWrite(earlier.reservation()); // prepared again without a commit: the new one counts
        }
        WriteReservation reservation = store.reserveWrite(owner(instanceId), keys, instance.layout());
        List<ShmSlot> slots = new ArrayList<>(reservation.slots().size());
        List<Integer> indices = new ArrayList<>(reservation.slots().size());
        for (Slot slot : reservation.slots()) {
            slots.add(shmSlot(slot));
            indices.add(slot.index());
        }
        if (!reservation.isEmpty()) {
            pendingWrites.put(pending, new PendingWrite(reservation, now));
        }
        // No slots: everything is cached (or there was no room), and the worker copies nothing.
        return MpTransferCodec.encode(new PrepareStoreResponse(TransferContext.store(slots, indices)));
    }

    private boolean commitStore(IpcCacheServerKey key, long instanceId, byte[] data, long now) throws MpProtocolException {
        MpInstances.Instance instance = registered(instanceId, now);
        List<MpObjectKey> keys = objectKeys(key, now);
        PendingWrite pending = pendingWrites.remove(new Pending(instanceId, keys));
        if (data.length > 0) {
            // Pickled tensors (LMCache's fallback when a context has no slots): never sent to this server,
            // which always hands out slots, and not readable from Java.
            if (pending != null) {
                store.abortWrite(pending.reservation());
            }
            drop("pickled_data", "commit_store with " + data.length + " bytes of pickled tensors; answered false");
            return false;
        }
        if (pending == null || !store.finishWrite(pending.reservation())) {
            return false;
        }
        l2.ifPresent(tiers -> tiers.published(pending.reservation().slots().stream().map(Slot::key).toList(),
                instance.layout()));
        return true;
    }

    private byte[] prepareRetrieve(IpcCacheServerKey key, long instanceId, long now) throws MpProtocolException {
        MpInstances.Instance instance = registered(instanceId, now);
        requireWorker(key, instance);
        List<MpObjectKey> keys = objectKeys(key, now);
        List<Slot> slots = store.unsafeRead(keys);
        if (slots.size() != keys.size()) {
            return MpTransferCodec.encode(PrepareRetrieveResponse.missing());
        }
        if (!pendingReads.add(instanceId, key.requestId(), keys, now)) {
            drop("pending_reads_full", "prepare_retrieve past the budget of keys prepared and not committed ("
                    + pendingReads.heldKeys() + " held); answered as a miss");
            return MpTransferCodec.encode(PrepareRetrieveResponse.missing());
        }
        List<ShmSlot> shm = new ArrayList<>(slots.size());
        for (Slot slot : slots) {
            shm.add(shmSlot(slot));
        }
        return MpTransferCodec.encode(new PrepareRetrieveResponse(true, TransferContext.retrieve(shm)));
    }

    /**
     * Releases the read locks the lookup took for what this worker has now copied out: only for a
     * retrieve this instance prepared under this request, once (a repeated or foreign commit would
     * drop another reader's lock, and the pool could reuse memory that reader is still copying).
     */
    private void commitRetrieve(IpcCacheServerKey key, long instanceId, long now) throws MpProtocolException {
        instances.touch(instanceId, now);
        List<MpObjectKey> keys = objectKeys(key, now);
        if (pendingReads.remove(instanceId, key.requestId(), keys)) {
            store.releaseRead(keys);
        }
    }

    private static void requireWorker(IpcCacheServerKey key, MpInstances.Instance instance) throws MpProtocolException {
        if (key.workerId().isEmpty()) {
            throw new MpProtocolException(MpDropReason.BAD_ARGUMENT, "a transfer key needs a worker_id");
        }
        if (!key.modelName().equals(instance.model()) || key.worldSize() != instance.worldSize()) {
            throw new MpProtocolException(MpDropReason.BAD_ARGUMENT, "the key's model " + key.modelName() + " (world size "
                    + key.worldSize() + ") is not the one instance " + instance.instanceId() + " registered");
        }
    }

    private static ShmSlot shmSlot(Slot slot) {
        int[] dims = slot.layout().shape().toArray();
        List<Long> shape = new ArrayList<>(dims.length);
        for (int d : dims) {
            shape.add((long) d);
        }
        return new ShmSlot(slot.offset(), slot.length(), shape, slot.layout().dtype().torchName());
    }

    // ---- lookup, prefetch, sessions -----------------------------------------------------------

    /**
     * Counts the leading chunks every rank stored and read-locks their objects for the retrieves to
     * come. When the pool's run stops short and lower tiers are configured, a load from them starts
     * off the loop thread; until it ends the request's prefetch status is None (LMCache's clients poll).
     */
    private void lookup(IpcCacheServerKey key, int tpSize, long now) throws MpProtocolException {
        List<MpObjectKey> keys = objectKeys(key, now);
        Session s = sessions.get(key.requestId(), now).orElseThrow();
        int ranks = key.workerId().isPresent() ? 1 : key.worldSize();
        Optional<ObjectLayout> layout = instances.layout(key.modelName(), key.worldSize());
        int hits = layout.isEmpty() ? 0 // no worker registered this model
                : store.prefixLockAllRanks(keys, ranks, key.numKvReaders());
        s.lookupKeys = keys;
        s.lookupRanks = ranks;
        s.lookupFirstChunk = key.start() / settings.chunkSize();
        s.lookupHits = hits;
        if (s.unreadHits < 0 && !s.loading) {
            unreadJobs++;
        }
        s.unreadHits = hits;
        s.loading = false;
        int generation = ++s.generation;
        if (l2.isPresent() && layout.isPresent() && hits * ranks < keys.size()) {
            List<MpObjectKey> missing = keys.subList(hits * ranks, keys.size());
            String requestId = key.requestId();
            int readers = Math.max(1, key.numKvReaders());
            s.loading = l2.get().prefetch(missing, ranks, readers, layout.get(), loaded -> {
                completions.add(() -> loaded(requestId, s, generation, missing, ranks, readers, loaded));
                wakeLoop.run();
            });
        }
    }

    /** A load from L2 ended (loop thread): its session learns the count, or a stale load's locks go. */
    private void loaded(String requestId, Session s, int generation, List<MpObjectKey> missing, int ranks, int readers,
                        int chunks) {
        long now = System.nanoTime();
        Optional<Session> current = sessions.get(requestId, now);
        if (current.isEmpty() || current.get() != s || s.generation != generation || !s.loading) {
            for (int i = 0; i < readers; i++) { // the load locked each object once per reader; nobody will retrieve them
                store.releaseRead(missing.subList(0, chunks * ranks));
            }
            if (current.isEmpty()) {
                answerWaiters(requestId, now); // the session ended: its waits learn 0 now, not at their timeout
            }
            return;
        }
        s.loading = false;
        s.lookupHits += chunks;
        s.unreadHits = s.lookupHits;
        answerWaiters(requestId, now);
    }

    /** Answers the parked waits of {@code requestId} with what {@code query_prefetch_status} would say now. */
    private void answerWaiters(String requestId, long now) {
        Iterator<Waiter> it = waiters.iterator();
        while (it.hasNext()) {
            Waiter w = it.next();
            if (w.requestId().equals(requestId)) {
                it.remove();
                deferred.add(new Deferred(w.identity(), new Reply(w.uid(), w.op(),
                        readPrefetch(requestId, now, true).map(MpScalars::encodeInt).orElse(null))));
            }
        }
    }

    /**
     * Parks a {@code wait_prefetch_status} whose session is still loading, until the load ends or
     * the request's timeout passes (then None, as LMCache answers); false when it can be answered now.
     */
    private boolean waitFor(MpRequest r, long now) throws MpProtocolException {
        String requestId = requestId(r);
        double timeout = MpScalars.decodeNumber(r.arg(1), "timeout");
        Optional<Session> s = sessions.get(requestId, now);
        if (s.isEmpty() || !s.get().loading || !(timeout > 0) || waiters.size() >= MAX_WAITERS) {
            return false; // answered now: the count, or None while the load runs (as at a timeout)
        }
        // Every load ends (each tier call is bounded by --l2-timeout); the lock lifetime only caps a silly timeout.
        long bound = Math.min((long) Math.min(timeout * 1e9, Long.MAX_VALUE / 4), settings.lockTtl().toNanos());
        waiters.add(new Waiter(requestId, r.identity(), r.uidFrame(), r.opFrame(), now + bound));
        return true;
    }

    /** {@code wake} is run, on a load's thread, when the load ended and its end waits for the loop. */
    void wakeLoopWith(Runnable wake) {
        wakeLoop = wake;
    }

    /** Runs the loads' ends and answers the waits due (loop thread); returns the replies to send. */
    List<Deferred> runCompletions(long now) {
        Runnable done;
        while ((done = completions.poll()) != null) {
            done.run();
        }
        Iterator<Waiter> it = waiters.iterator();
        while (it.hasNext()) {
            Waiter w = it.next();
            if (now - w.deadline() >= 0) {
                it.remove();
                deferred.add(new Deferred(w.identity(), new Reply(w.uid(), w.op(), null))); // timed out: None
            }
        }
        if (deferred.isEmpty()) {
            return List.of();
        }
        List<Deferred> out = List.copyOf(deferred);
        deferred.clear();
        return out;
    }

    /**
     * The hit count of the request's lookup (0 for an unknown request), or empty (None) while its
     * load from L2 runs; {@code consume}: only once.
     */
    private Optional<Long> readPrefetch(String requestId, long now, boolean consume) {
        Optional<Session> s = sessions.get(requestId, now);
        if (s.isEmpty()) {
            return Optional.of(0L);
        }
        if (s.get().loading) {
            return Optional.empty();
        }
        if (s.get().unreadHits < 0) {
            return Optional.of(0L);
        }
        int hits = s.get().unreadHits;
        if (consume) {
            forgetJob(s.get());
        }
        return Optional.of((long) hits);
    }

    /** Releases the lookup's locks on {@code [start, end)} when no retrieve follows. */
    private void freeLookupLocks(IpcCacheServerKey key, long now) {
        Optional<Session> found = sessions.get(key.requestId(), now);
        if (found.isEmpty()) {
            return;
        }
        Session s = found.get();
        int from = Math.max(key.start() / settings.chunkSize(), s.lookupFirstChunk);
        int to = Math.min(key.end() / settings.chunkSize(), s.lookupFirstChunk + s.lookupHits);
        if (from >= to) {
            return;
        }
        int offset = (from - s.lookupFirstChunk) * s.lookupRanks;
        int count = (to - from) * s.lookupRanks;
        store.releaseRead(s.lookupKeys.subList(offset, offset + count));
        if (to == s.lookupFirstChunk + s.lookupHits) {
            s.lookupHits = from - s.lookupFirstChunk; // freed to the end: never released twice
        }
    }

    private void endSession(String requestId) {
        sessions.remove(requestId).ifPresent(s -> {
            forgetJob(s);
            store.touch(s.lookupKeys);
        });
    }

    /** The session's lookup count will not be read (it was, or the session is gone); a load's end is then stale. */
    private void forgetJob(Session s) {
        if (s.unreadHits >= 0 || s.loading) {
            s.unreadHits = -1;
            s.loading = false;
            unreadJobs--;
        }
    }

    // ---- management ---------------------------------------------------------------------------

    void clear(boolean force) {
        store.clear(force);
    }

    /** Expired locks and reservations, idle sessions, silent instances, quotas; about once a second. */
    void housekeeping(long now) {
        store.sweep();
        sessions.sweep(now);
        long ttl = settings.lockTtl().toNanos();
        pendingWrites.values().removeIf(p -> now - p.sinceNanos() > ttl); // the store aborted them at the same age
        pendingReads.expire(now, ttl);
        if (!settings.reapTimeout().isZero()) {
            for (Long silent : instances.silent(now, settings.reapTimeout().toNanos())) {
                LOG.log(System.Logger.Level.INFO, "MP server: instance " + silent + " silent for longer than "
                        + settings.reapTimeout() + "; unregistered");
                unregister(silent);
            }
        }
        quotas.limits().forEach((salt, gb) -> store.trimSalt(salt, (long) (gb * (1L << 30))));
    }

    MpStatus status() {
        MpStoreStats st = store.stats();
        return new MpStatus(settings.chunkSize(), settings.poolBytes(), st.usedBytes(), st.readyObjects(), sessions.size(),
                unreadJobs, instances.describe(), requests, dropped, refused, refusal, st.evictions(), st.refusedNoMemory(),
                st.expiredReadLocks() + st.expiredWrites(), l2.map(MpLowerTiers::stats).orElse(MpL2Stats.NONE));
    }

    MpQuotas quotas() {
        return quotas;
    }

    private void drop(String reason, String detail) {
        count(dropped, reason);
        long now = System.nanoTime();
        Long last = lastDropLog.get(reason);
        if (detail != null && (last == null || now - last > Duration.ofSeconds(5).toNanos())) {
            lastDropLog.put(reason, now);
            LOG.log(System.Logger.Level.WARNING, "MP server: dropped a request (" + reason + "): " + detail
                    + " (LMCache's protocol has no error reply; the client times out)");
        }
    }

    private static void count(Map<String, Long> counts, String key) {
        counts.merge(key, 1L, Long::sum);
    }

    /** Stops the lower tiers first (their writer and loads copy from and into the pool), then the pool. */
    @Override
    public void close() {
        try {
            l2.ifPresent(MpLowerTiers::close);
        } finally {
            store.close();
        }
    }
}
