package lmcache4j.server.mp;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.store.Slot;
import lmcache4j.server.mp.store.WriteReservation;
import lmcache4j.server.mp.tier.MpLowerTiers;
import lmcache4j.server.mp.wire.IpcCacheServerKey;
import lmcache4j.server.mp.wire.MpDropReason;
import lmcache4j.server.mp.wire.MpObjectKey;
import lmcache4j.server.mp.wire.MpProtocolException;
import lmcache4j.server.mp.wire.MpTransferCodec;
import lmcache4j.server.mp.wire.PrepareRetrieveResponse;
import lmcache4j.server.mp.wire.PrepareStoreResponse;
import lmcache4j.server.mp.wire.ShmSlot;
import lmcache4j.server.mp.wire.TransferContext;

/**
 * The engine-driven transfers of LMCache's MP protocol: {@code prepare_store}/{@code commit_store}
 * (a worker copies a chunk into slots of the shared pool, then publishes it) and
 * {@code prepare_retrieve}/{@code commit_retrieve} (a worker copies a locked chunk out, then gives
 * the lock back). Each prepared transfer is remembered by its instance and keys, so a commit acts
 * only on what that instance prepared, once. Loop thread only.
 */
final class MpTransfers {
    /** A prepared transfer, by the instance and the object keys it covers. */
    private record Pending(long instanceId, List<MpObjectKey> keys) {
    }

    private record PendingWrite(WriteReservation reservation, long sinceNanos) {
    }

    private final MpServerSettings settings;
    private final MpObjectStore store;
    private final MpInstances instances;
    private final MpLookups lookups;
    private final Optional<MpLowerTiers> l2;
    private final MpDrops drops;
    private final Map<Pending, PendingWrite> pendingWrites = new HashMap<>();
    private final MpPendingReads pendingReads;

    MpTransfers(MpServerSettings settings, MpObjectStore store, MpInstances instances, MpLookups lookups,
                Optional<MpLowerTiers> l2, MpDrops drops) {
        this.settings = settings;
        this.store = store;
        this.instances = instances;
        this.lookups = lookups;
        this.l2 = l2;
        this.drops = drops;
        // Prepared retrieves hold their keys until committed: sixteen longest prompts' worth in all.
        this.pendingReads = new MpPendingReads(16L * Math.max(1, settings.maxTokens() / settings.chunkSize()));
    }

    byte[] prepareStore(IpcCacheServerKey key, long instanceId, long now) throws MpProtocolException {
        MpInstances.Instance instance = registered(instanceId, now);
        requireWorker(key, instance);
        List<MpObjectKey> keys = lookups.objectKeys(key, now);
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

    boolean commitStore(IpcCacheServerKey key, long instanceId, byte[] data, long now) throws MpProtocolException {
        MpInstances.Instance instance = registered(instanceId, now);
        List<MpObjectKey> keys = lookups.objectKeys(key, now);
        PendingWrite pending = pendingWrites.remove(new Pending(instanceId, keys));
        if (data.length > 0) {
            // Pickled tensors (LMCache's fallback when a context has no slots): never sent to this server,
            // which always hands out slots, and not readable from Java.
            if (pending != null) {
                store.abortWrite(pending.reservation());
            }
            drops.drop("pickled_data", "commit_store with " + data.length + " bytes of pickled tensors; answered false");
            return false;
        }
        if (pending == null || !store.finishWrite(pending.reservation())) {
            return false;
        }
        l2.ifPresent(tiers -> tiers.published(pending.reservation().slots().stream().map(Slot::key).toList(),
                instance.layout()));
        return true;
    }

    byte[] prepareRetrieve(IpcCacheServerKey key, long instanceId, long now) throws MpProtocolException {
        MpInstances.Instance instance = registered(instanceId, now);
        requireWorker(key, instance);
        List<MpObjectKey> keys = lookups.objectKeys(key, now);
        List<Slot> slots = store.unsafeRead(keys);
        if (slots.size() != keys.size()) {
            return MpTransferCodec.encode(PrepareRetrieveResponse.missing());
        }
        if (!pendingReads.add(instanceId, key.requestId(), keys, now)) {
            drops.drop("pending_reads_full", "prepare_retrieve past the budget of keys prepared and not committed ("
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
    void commitRetrieve(IpcCacheServerKey key, long instanceId, long now) throws MpProtocolException {
        instances.touch(instanceId, now);
        List<MpObjectKey> keys = lookups.objectKeys(key, now);
        if (pendingReads.remove(instanceId, key.requestId(), keys)) {
            store.releaseRead(keys);
        }
    }

    /** An instance went away: its pending writes are never published, its pending reads are released. */
    void forgetInstance(long instanceId) {
        store.abortAll(owner(instanceId));
        pendingWrites.keySet().removeIf(p -> p.instanceId() == instanceId);
        pendingReads.removeInstance(instanceId, store::releaseRead);
    }

    /** Forgets transfers prepared longer than the lock lifetime ago (the store aborted their reservations at the same age). */
    void expire(long now) {
        long ttl = settings.lockTtl().toNanos();
        pendingWrites.values().removeIf(p -> now - p.sinceNanos() > ttl);
        pendingReads.expire(now, ttl);
    }

    private MpInstances.Instance registered(long instanceId, long now) throws MpProtocolException {
        return instances.touch(instanceId, now).orElseThrow(() -> new MpProtocolException(MpDropReason.BAD_ARGUMENT,
                "instance " + instanceId + " is not registered (register_kv_cache_engine_driven_context first;"
                        + " after a server restart a worker must register again)"));
    }

    private static String owner(long instanceId) {
        return Long.toString(instanceId);
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
}
