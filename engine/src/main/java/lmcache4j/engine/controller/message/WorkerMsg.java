package lmcache4j.engine.controller.message;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * LMCache's {@code WorkerMsg} group: what a worker PUSHes to the controller's PULL socket, with no
 * reply. Chunk keys are 64-bit values (see {@code ControllerKeys}); every field keeps LMCache's
 * name in snake case on the wire.
 */
public sealed interface WorkerMsg extends ControllerMessage {
    /** The instance that sent it. */
    String instanceId();

    /** The worker of that instance that sent it. */
    int workerId();

    /**
     * {@code DeRegisterMsg}: the worker is going away; the controller drops it and its entries.
     *
     * @param instanceId the instance
     * @param workerId   the worker
     * @param ip         its control socket's address
     * @param port       its control socket's port
     */
    record DeRegisterMsg(String instanceId, int workerId, String ip, int port) implements WorkerMsg {
        public DeRegisterMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(ip, "ip");
        }
    }

    /**
     * {@code KVAdmitMsg}: one chunk entered a location (LMCache's unbatched form).
     *
     * @param instanceId the instance
     * @param workerId   the worker
     * @param key        the chunk key
     * @param location   the tier, by LMCache's backend name
     * @param seqNum     the operation's sequence number for (worker, location); 0 by default
     */
    record KVAdmitMsg(String instanceId, int workerId, long key, String location, long seqNum) implements WorkerMsg {
        public KVAdmitMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(location, "location");
        }
    }

    /**
     * {@code KVEvictMsg}: one chunk left a location (LMCache's unbatched form).
     *
     * @param instanceId the instance
     * @param workerId   the worker
     * @param key        the chunk key
     * @param location   the tier, by LMCache's backend name
     * @param seqNum     the operation's sequence number for (worker, location); 0 by default
     */
    record KVEvictMsg(String instanceId, int workerId, long key, String location, long seqNum) implements WorkerMsg {
        public KVEvictMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(location, "location");
        }
    }

    /**
     * {@code BatchedKVOperationMsg}: admits and evicts of one location, in order.
     *
     * @param instanceId the instance
     * @param workerId   the worker
     * @param location   the tier, by LMCache's backend name
     * @param operations the operations, oldest first
     */
    record BatchedKVOperationMsg(String instanceId, int workerId, String location, List<KVOpEvent> operations)
            implements WorkerMsg {
        public BatchedKVOperationMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(location, "location");
            operations = List.copyOf(operations);
        }
    }

    /**
     * {@code FullSyncBatchMsg}: one batch of the keys a location holds, during a full sync.
     *
     * @param instanceId the instance
     * @param workerId   the worker
     * @param location   the tier
     * @param syncId     the sync session, from {@link WorkerReqMsg.FullSyncStartMsg}
     * @param batchId    this batch's number, from 0
     * @param keys       the chunk keys
     */
    record FullSyncBatchMsg(String instanceId, int workerId, String location, String syncId, long batchId, long[] keys)
            implements WorkerMsg {
        public FullSyncBatchMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(syncId, "syncId");
            Objects.requireNonNull(keys, "keys");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof FullSyncBatchMsg m && instanceId.equals(m.instanceId) && workerId == m.workerId
                    && location.equals(m.location) && syncId.equals(m.syncId) && batchId == m.batchId
                    && Arrays.equals(keys, m.keys);
        }

        @Override
        public int hashCode() {
            return Objects.hash(instanceId, workerId, location, syncId, batchId) * 31 + Arrays.hashCode(keys);
        }

        @Override
        public String toString() {
            return "FullSyncBatchMsg[instanceId=" + instanceId + ", workerId=" + workerId + ", location=" + location
                    + ", syncId=" + syncId + ", batchId=" + batchId + ", keys=" + keys.length + " keys]";
        }
    }

    /**
     * {@code FullSyncEndMsg}: every batch of a full sync has been sent.
     *
     * @param instanceId      the instance
     * @param workerId        the worker
     * @param location        the tier
     * @param syncId          the sync session
     * @param actualTotalKeys how many keys the batches held
     */
    record FullSyncEndMsg(String instanceId, int workerId, String location, String syncId, long actualTotalKeys)
            implements WorkerMsg {
        public FullSyncEndMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(syncId, "syncId");
        }
    }
}
