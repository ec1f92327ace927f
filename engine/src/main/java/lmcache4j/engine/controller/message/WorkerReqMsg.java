package lmcache4j.engine.controller.message;

import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * LMCache's {@code WorkerReqMsg} group: what a worker asks the controller over its DEALER socket
 * (the controller's ROUTER answers with a {@link WorkerReqRetMsg}).
 */
public sealed interface WorkerReqMsg extends ControllerMessage {
    /**
     * {@code RegisterMsg}: a worker joins; the answer is a {@link WorkerReqRetMsg.RegisterRetMsg}.
     *
     * @param instanceId  the instance
     * @param workerId    the worker
     * @param ip          where its control (REP) socket listens
     * @param port        that socket's port
     * @param peerInitUrl its P2P transfer URL, when P2P is on
     */
    record RegisterMsg(String instanceId, int workerId, String ip, int port, Optional<String> peerInitUrl)
            implements WorkerReqMsg {
        public RegisterMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(ip, "ip");
            Objects.requireNonNull(peerInitUrl, "peerInitUrl");
        }
    }

    /**
     * {@code HeartbeatMsg}: the worker is alive (it carries the registration fields so that a
     * controller that lost the worker can re-register it).
     *
     * @param instanceId  the instance
     * @param workerId    the worker
     * @param ip          its control socket's address
     * @param port        its control socket's port
     * @param peerInitUrl its P2P transfer URL, when P2P is on
     */
    record HeartbeatMsg(String instanceId, int workerId, String ip, int port, Optional<String> peerInitUrl)
            implements WorkerReqMsg {
        public HeartbeatMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(ip, "ip");
            Objects.requireNonNull(peerInitUrl, "peerInitUrl");
        }
    }

    /**
     * {@code BatchedP2PLookupMsg}: which peers hold these chunks?
     *
     * @param hashes     the chunk keys, in prefix order
     * @param instanceId the asking instance
     * @param workerId   the asking worker (tensor-parallel rank)
     */
    record BatchedP2PLookupMsg(long[] hashes, String instanceId, int workerId) implements WorkerReqMsg {
        public BatchedP2PLookupMsg {
            Objects.requireNonNull(hashes, "hashes");
            Objects.requireNonNull(instanceId, "instanceId");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof BatchedP2PLookupMsg m && Arrays.equals(hashes, m.hashes)
                    && instanceId.equals(m.instanceId) && workerId == m.workerId;
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(hashes) * 31 + Objects.hash(instanceId, workerId);
        }

        @Override
        public String toString() {
            return "BatchedP2PLookupMsg[hashes=" + Arrays.toString(hashes) + ", instanceId=" + instanceId
                    + ", workerId=" + workerId + "]";
        }
    }

    /**
     * {@code FullSyncStartMsg}: a full sync of one location begins; the controller clears what it
     * had for it and answers {@link WorkerReqRetMsg.FullSyncStartRetMsg}.
     *
     * @param instanceId the instance
     * @param workerId   the worker
     * @param location   the tier
     * @param syncId     a fresh id for this sync session
     * @param totalKeys  how many keys will follow
     * @param batchCount in how many batches
     */
    record FullSyncStartMsg(String instanceId, int workerId, String location, String syncId, long totalKeys,
                            long batchCount) implements WorkerReqMsg {
        public FullSyncStartMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(syncId, "syncId");
        }
    }

    /**
     * {@code FullSyncStatusMsg}: how far is this sync? (answered by {@link WorkerReqRetMsg.FullSyncStatusRetMsg})
     *
     * @param instanceId the instance
     * @param workerId   the worker
     * @param syncId     the sync session
     */
    record FullSyncStatusMsg(String instanceId, int workerId, String syncId) implements WorkerReqMsg {
        public FullSyncStatusMsg {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(syncId, "syncId");
        }
    }
}
