package lmcache4j.server.controller.registry;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import lmcache4j.server.controller.index.ChunkIndex;
import lmcache4j.server.controller.index.Holder;

/**
 * Full re-syncs in progress, LMCache's protocol: FullSyncStartMsg clears what the index holds for
 * that worker and location and starts the sync; FullSyncBatchMsgs (pushed, unacknowledged) carry
 * the keys; FullSyncEndMsg says how many were sent; FullSyncStatusMsg asks whether the worker may
 * leave its freeze and which batches never arrived. While a sync runs, incremental admits and
 * evicts of that worker and location are discarded (the sync's snapshot supersedes them).
 *
 * <p>A worker the controller learned of from a heartbeat (it restarted and forgot the worker) is
 * asked for a full sync in every heartbeat reply until it starts one ({@link #request},
 * {@link #requested}), as LMCache's controller asks every worker that is neither syncing nor synced:
 * a reply the worker never received (it gave up waiting, the controller was slow to answer its
 * first request) must not leave the index empty for good.
 *
 * <p>Used from the controller's ingestion thread; {@link #isSyncing} is also read by it only.
 */
public final class FullSyncTracker {
    /** A sync announcing more batches than this is refused (a bitset that large is an attack, not a cache). */
    public static final long MAX_BATCHES = 1L << 24;

    private final ChunkIndex index;
    private final Map<Target, Sync> syncs = new ConcurrentHashMap<>();
    /** Workers asked for a full sync that have not started one: registered workers only, so as many at most. */
    private final Set<WorkerKey> requested = ConcurrentHashMap.newKeySet();

    private record Target(WorkerKey worker, String location) {
    }

    private static final class Sync {
        final String syncId;
        final long batchCount;
        final long totalKeys;
        final BitSet received = new BitSet();
        long keysReceived;
        boolean ended;
        long actualTotalKeys = -1;

        Sync(String syncId, long batchCount, long totalKeys) {
            this.syncId = syncId;
            this.batchCount = batchCount;
            this.totalKeys = totalKeys;
        }

        boolean complete() {
            return ended && received.cardinality() >= batchCount;
        }
    }

    /** The answer to a FullSyncStatusMsg. */
    public record Status(String syncId, boolean isComplete, double globalProgress, boolean canExitFreeze,
                         List<Long> missingBatches) {
    }

    public FullSyncTracker(ChunkIndex index) {
        this.index = Objects.requireNonNull(index, "index");
    }

    /**
     * Starts a sync: drops the index entries of the worker's location and discards its incremental
     * operations until the sync completes.
     *
     * @return empty when accepted, else why not (FullSyncStartRetMsg.error_msg)
     */
    public Optional<String> start(WorkerKey worker, String location, String syncId, long totalKeys, long batchCount) {
        if (batchCount < 0 || batchCount > MAX_BATCHES) {
            return Optional.of("batch_count must be 0.." + MAX_BATCHES + ", was " + batchCount);
        }
        if (totalKeys < 0) {
            return Optional.of("total_keys must be >= 0, was " + totalKeys);
        }
        syncs.put(new Target(worker, location), new Sync(syncId, batchCount, totalKeys));
        index.removeHolder(new Holder(worker.instanceId(), worker.workerId(), location));
        requested.remove(worker);
        return Optional.empty();
    }

    /** Asks {@code worker} (registered) for a full sync: {@link #requested} holds until it starts one or leaves. */
    public void request(WorkerKey worker) {
        requested.add(Objects.requireNonNull(worker, "worker"));
    }

    /** Whether {@code worker} was asked for a full sync and has not started one. */
    public boolean requested(WorkerKey worker) {
        return requested.contains(worker);
    }

    /**
     * Indexes one batch of a running sync.
     *
     * @return false when no sync with that id runs for the worker and location (the batch is dropped)
     */
    public boolean batch(WorkerKey worker, String location, String syncId, long batchId, long[] keys, int n) {
        Sync s = syncs.get(new Target(worker, location));
        if (s == null || !s.syncId.equals(syncId) || batchId < 0 || batchId >= s.batchCount) {
            return false;
        }
        if (!s.received.get((int) batchId)) {
            try (ChunkIndex.Batch b = index.batch()) {
                int h = b.holder(new Holder(worker.instanceId(), worker.workerId(), location));
                for (int i = 0; i < n; i++) {
                    b.admit(h, keys[i]);
                }
            }
            s.received.set((int) batchId);
            s.keysReceived += n;
        }
        return true;
    }

    /** Records a sync's end; false when no such sync runs. */
    public boolean end(WorkerKey worker, String location, String syncId, long actualTotalKeys) {
        Sync s = syncs.get(new Target(worker, location));
        if (s == null || !s.syncId.equals(syncId)) {
            return false;
        }
        s.ended = true;
        s.actualTotalKeys = actualTotalKeys;
        return true;
    }

    /**
     * Where the worker's sync {@code syncId} stands (any location). Missing batches are listed once
     * the end has arrived (before that they may still be on their way). Unknown sync: not complete,
     * may not exit the freeze, nothing missing.
     */
    public Status status(WorkerKey worker, String syncId) {
        Sync s = null;
        for (Map.Entry<Target, Sync> e : syncs.entrySet()) {
            if (e.getKey().worker().equals(worker) && e.getValue().syncId.equals(syncId)) {
                s = e.getValue();
            }
        }
        double progress = globalProgress();
        if (s == null) {
            return new Status(syncId, false, progress, false, List.of());
        }
        List<Long> missing = new ArrayList<>();
        if (s.ended) {
            for (int b = s.received.nextClearBit(0); b < s.batchCount && missing.size() < 10_000; b = s.received.nextClearBit(b + 1)) {
                missing.add((long) b);
            }
        }
        boolean complete = s.complete();
        return new Status(syncId, complete, progress, complete, missing);
    }

    /** Received / announced batches over every sync not yet complete; 1.0 when none runs. */
    public double globalProgress() {
        long expected = 0;
        long got = 0;
        for (Sync s : syncs.values()) {
            expected += Math.max(s.batchCount, 1);
            got += s.complete() ? Math.max(s.batchCount, 1) : s.received.cardinality();
        }
        return expected == 0 ? 1.0 : (double) got / expected;
    }

    /** Whether incremental operations of this worker and location are being discarded now. */
    public boolean isSyncing(WorkerKey worker, String location) {
        if (syncs.isEmpty()) {
            return false;
        }
        Sync s = syncs.get(new Target(worker, location));
        return s != null && !s.complete();
    }

    /** Syncs not yet complete. */
    public int running() {
        return (int) syncs.values().stream().filter(s -> !s.complete()).count();
    }

    /** Forgets every sync of a worker that left, and any request for one. */
    public void forget(WorkerKey worker) {
        syncs.keySet().removeIf(t -> t.worker().equals(worker));
        requested.remove(worker);
    }
}
