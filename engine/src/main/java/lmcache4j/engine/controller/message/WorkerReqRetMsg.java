package lmcache4j.engine.controller.message;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/** LMCache's {@code WorkerReqRetMsg} group: the controller's answers to {@link WorkerReqMsg}s. */
public sealed interface WorkerReqRetMsg extends ControllerMessage permits ErrorMsg,
        WorkerReqRetMsg.RegisterRetMsg, WorkerReqRetMsg.HeartbeatRetMsg, WorkerReqRetMsg.BatchedP2PLookupRetMsg,
        WorkerReqRetMsg.FullSyncStartRetMsg, WorkerReqRetMsg.FullSyncStatusRetMsg {

    /** The {@code extra_config} key under which the controller names its heartbeat socket. */
    String HEARTBEAT_URL = "heartbeat_url";

    /**
     * {@code RegisterRetMsg}: registration accepted.
     *
     * @param extraConfig settings for the worker, for example {@code heartbeat_url}
     */
    record RegisterRetMsg(Map<String, String> extraConfig) implements WorkerReqRetMsg {
        public RegisterRetMsg {
            extraConfig = Collections.unmodifiableMap(new LinkedHashMap<>(extraConfig));
        }

        /** The heartbeat socket's address, when the controller gave one. */
        public Optional<String> heartbeatUrl() {
            return Optional.ofNullable(extraConfig.get(HEARTBEAT_URL));
        }
    }

    /**
     * {@code HeartbeatRetMsg}: heartbeat seen, with the commands the worker must run, in order.
     *
     * @param commands the commands; usually none
     */
    record HeartbeatRetMsg(List<HeartbeatCommand> commands) implements WorkerReqRetMsg {
        public HeartbeatRetMsg {
            commands = List.copyOf(commands);
        }
    }

    /**
     * One holder in a {@link BatchedP2PLookupRetMsg}: a {@code (str, str, int, str)} tuple.
     *
     * @param instanceId   the peer instance
     * @param location     where it holds them
     * @param numHitChunks how many chunks of the prefix it holds
     * @param peerInitUrl  its P2P transfer URL
     */
    record P2PHolder(String instanceId, String location, long numHitChunks, String peerInitUrl) {
        public P2PHolder {
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(peerInitUrl, "peerInitUrl");
        }
    }

    /**
     * {@code BatchedP2PLookupRetMsg}: the peers that hold the asked chunks.
     *
     * @param layoutInfo the holders
     */
    record BatchedP2PLookupRetMsg(List<P2PHolder> layoutInfo) implements WorkerReqRetMsg {
        public BatchedP2PLookupRetMsg {
            layoutInfo = List.copyOf(layoutInfo);
        }
    }

    /**
     * {@code FullSyncStartRetMsg}: may the sync begin?
     *
     * @param syncId   the sync session
     * @param accepted whether it was accepted
     * @param errorMsg why not, when it was not
     */
    record FullSyncStartRetMsg(String syncId, boolean accepted, Optional<String> errorMsg) implements WorkerReqRetMsg {
        public FullSyncStartRetMsg {
            Objects.requireNonNull(syncId, "syncId");
            Objects.requireNonNull(errorMsg, "errorMsg");
        }
    }

    /**
     * {@code FullSyncStatusRetMsg}: the progress of a sync.
     *
     * @param syncId         the sync session
     * @param isComplete     whether this worker's sync is complete
     * @param globalProgress progress of every sync in progress, 0.0 to 1.0
     * @param canExitFreeze  whether the worker may leave freeze mode
     * @param missingBatches the batch ids the controller never received (resend them)
     */
    record FullSyncStatusRetMsg(String syncId, boolean isComplete, double globalProgress, boolean canExitFreeze,
                                long[] missingBatches) implements WorkerReqRetMsg {
        public FullSyncStatusRetMsg {
            Objects.requireNonNull(syncId, "syncId");
            Objects.requireNonNull(missingBatches, "missingBatches");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof FullSyncStatusRetMsg m && syncId.equals(m.syncId) && isComplete == m.isComplete
                    && Double.compare(globalProgress, m.globalProgress) == 0 && canExitFreeze == m.canExitFreeze
                    && Arrays.equals(missingBatches, m.missingBatches);
        }

        @Override
        public int hashCode() {
            return Objects.hash(syncId, isComplete, globalProgress, canExitFreeze) * 31 + Arrays.hashCode(missingBatches);
        }

        @Override
        public String toString() {
            return "FullSyncStatusRetMsg[syncId=" + syncId + ", isComplete=" + isComplete + ", globalProgress="
                    + globalProgress + ", canExitFreeze=" + canExitFreeze + ", missingBatches="
                    + Arrays.toString(missingBatches) + "]";
        }
    }
}
