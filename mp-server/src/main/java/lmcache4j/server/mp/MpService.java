package lmcache4j.server.mp;

import java.io.IOException;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.host.SharedMemoryArena;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.store.MpStoreOptions;
import lmcache4j.server.mp.store.MpStoreStats;
import lmcache4j.server.mp.store.ObjectLayout;
import lmcache4j.server.mp.tier.MpLowerTiers;
import lmcache4j.server.mp.wire.IpcCacheServerKey;
import lmcache4j.server.mp.wire.MpDropReason;
import lmcache4j.server.mp.wire.MpFrames;
import lmcache4j.server.mp.wire.MpKeyCodec;
import lmcache4j.server.mp.wire.MpOperation;
import lmcache4j.server.mp.wire.MpProtocolException;
import lmcache4j.server.mp.wire.MpRegistrationCodec;
import lmcache4j.server.mp.wire.MpRequest;
import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.RegisterEngineDrivenContextPayload;
import lmcache4j.server.mp.wire.RegisterEngineDrivenContextResponse;

/**
 * The operations of LMCache's MP protocol over the shared-memory store: each request parsed and
 * dispatched, registration of engine-driven workers, clear, housekeeping and status. The transfers
 * ({@link MpTransfers}) and the sessions, lookups and prefetch status ({@link MpLookups}) have
 * classes of their own. Confined to the server's loop thread (the store itself is thread-safe).
 * Every failure is a dropped request, counted by reason ({@link MpDrops}): LMCache's protocol has
 * no error reply.
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

    private final MpServerSettings settings;
    private final MpObjectStore store;
    private final MpInstances instances;
    private final MpQuotas quotas;
    /** The lower tiers, when configured. */
    private final Optional<MpLowerTiers> l2;
    private final MpLookups lookups;
    private final MpTransfers transfers;
    private final MpDrops drops = new MpDrops();
    private final Map<String, Long> requests = new TreeMap<>();
    private final Set<MpOperation> refusalLogged = EnumSet.noneOf(MpOperation.class);
    private final Map<String, Long> refused = new TreeMap<>();
    /** What the operator must change, once a CUDA worker (LMCache-driven transfer) has been refused; else empty. */
    private String refusal = "";

    private MpService(MpServerSettings settings, MpObjectStore store, Optional<MpLowerTiers> l2) {
        this.settings = settings;
        this.store = store;
        this.l2 = l2;
        this.instances = new MpInstances(settings.maxInstances());
        this.quotas = new MpQuotas(store);
        this.lookups = new MpLookups(settings, store, instances, l2);
        this.transfers = new MpTransfers(settings, store, instances, lookups, l2, drops);
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
            drops.drop(e.reason().label(), e.getMessage());
            return null;
        }
        MpOperation op = request.operation();
        count(requests, op.wireName());
        if (!op.served()) {
            drops.drop(MpDropReason.REFUSED_OP.label(), null);
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
            if (request.operation() == MpOperation.WAIT_PREFETCH_STATUS && lookups.waitFor(request, now)) {
                return null; // answered when the session's load ends or the timeout passes
            }
            return new Reply(request.uidFrame(), request.opFrame(), serve(request, now).orElse(null));
        } catch (MpProtocolException e) {
            drops.drop(e.reason().label(), op.wireName() + ": " + e.getMessage());
            return null;
        }
    }

    /** A request of too many frames, refused unread. */
    Reply refuse(String reason, List<byte[]> frames) {
        drops.drop(reason, frames.size() + "+ frames");
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
            case PREPARE_STORE -> Optional.of(transfers.prepareStore(key(r, 0), instanceId(r, 1), now));
            case COMMIT_STORE -> Optional.of(MpScalars.encodeBool(transfers.commitStore(key(r, 0), instanceId(r, 1),
                    MpScalars.decodeBytes(r.arg(2), "data", settings.maxMessageBytes()), now)));
            case PREPARE_RETRIEVE -> Optional.of(transfers.prepareRetrieve(key(r, 0), instanceId(r, 1), now));
            case COMMIT_RETRIEVE -> {
                transfers.commitRetrieve(key(r, 0), instanceId(r, 1), now);
                yield Optional.of(MpScalars.encodeBool(true));
            }
            case LOOKUP -> {
                lookups.lookup(key(r, 0), (int) MpScalars.decodeInt(r.arg(1), "tp_size", 1, IpcCacheServerKey.MAX_WORLD_SIZE), now);
                yield Optional.empty();
            }
            case QUERY_PREFETCH_STATUS, WAIT_PREFETCH_STATUS -> lookups.readPrefetch(MpLookups.requestId(r), now, true).map(MpScalars::encodeInt);
            case QUERY_PREFETCH_LOOKUP_HITS -> lookups.readPrefetch(MpLookups.requestId(r), now, false).map(MpScalars::encodeInt);
            case FREE_LOOKUP_LOCKS -> {
                MpScalars.decodeInt(r.arg(1), "tp_size", 1, IpcCacheServerKey.MAX_WORLD_SIZE);
                lookups.freeLookupLocks(key(r, 0), now);
                yield Optional.empty();
            }
            case END_SESSION -> {
                if (r.args().size() > 1) {
                    MpScalars.checkWellFormed(r.arg(1), "end_info"); // a newer client's extra: accepted, ignored
                }
                lookups.endSession(MpLookups.requestId(r));
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
        transfers.forgetInstance(instanceId);
        instances.unregister(instanceId);
    }

    // ---- management ---------------------------------------------------------------------------

    void clear(boolean force) {
        store.clear(force);
    }

    /** Expired locks and reservations, idle sessions, silent instances, quotas; about once a second. */
    void housekeeping(long now) {
        store.sweep();
        lookups.sweep(now);
        transfers.expire(now);
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
        return new MpStatus(settings.chunkSize(), settings.poolBytes(), st.usedBytes(), st.readyObjects(),
                lookups.sessionCount(), lookups.unreadJobs(), instances.describe(), requests, drops.counts(), refused, refusal,
                st.evictions(), st.refusedNoMemory(), st.expiredReadLocks() + st.expiredWrites(), l2.map(MpLowerTiers::stats).orElse(MpL2Stats.NONE));
    }

    MpQuotas quotas() {
        return quotas;
    }

    private static void count(Map<String, Long> counts, String key) {
        counts.merge(key, 1L, Long::sum);
    }

    /** {@code wake} is run, on a load's thread, when a load from L2 ended and its end waits for the loop. */
    void wakeLoopWith(Runnable wake) {
        lookups.wakeLoopWith(wake);
    }

    /** Runs the loads' ends and answers the waits due (loop thread); returns the replies to send. */
    List<Deferred> runCompletions(long now) {
        return lookups.runCompletions(now);
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
