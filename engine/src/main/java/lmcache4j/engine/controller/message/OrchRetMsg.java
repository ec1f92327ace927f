package lmcache4j.engine.controller.message;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/** LMCache's {@code OrchRetMsg} group: the controller's answers to {@link OrchMsg}s. */
public sealed interface OrchRetMsg extends ControllerMessage permits ErrorMsg,
        OrchRetMsg.QueryInstRetMsg, OrchRetMsg.LookupRetMsg, OrchRetMsg.ClearRetMsg, OrchRetMsg.PinRetMsg,
        OrchRetMsg.CompressRetMsg, OrchRetMsg.DecompressRetMsg, OrchRetMsg.MoveRetMsg, OrchRetMsg.HealthRetMsg,
        OrchRetMsg.CheckFinishRetMsg, OrchRetMsg.QueryWorkerInfoRetMsg {

    /**
     * {@code QueryInstRetMsg}.
     *
     * @param eventId    the request's id
     * @param instanceId the instance at that address, if any
     */
    record QueryInstRetMsg(String eventId, Optional<String> instanceId) implements OrchRetMsg {
        public QueryInstRetMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(instanceId, "instanceId");
        }
    }

    /**
     * Where one instance holds a prefix: LMCache's {@code (str, int)} tuple.
     *
     * @param location the tier
     * @param endToken the end (exclusive) of the cached prefix, in tokens
     */
    record Layout(String location, long endToken) {
        public Layout {
            Objects.requireNonNull(location, "location");
        }
    }

    /**
     * {@code LookupRetMsg}.
     *
     * @param eventId    the request's id
     * @param layoutInfo instance id to where and how long its cached prefix is, in the controller's order
     */
    record LookupRetMsg(String eventId, Map<String, Layout> layoutInfo) implements OrchRetMsg {
        public LookupRetMsg {
            Objects.requireNonNull(eventId, "eventId");
            layoutInfo = Collections.unmodifiableMap(new LinkedHashMap<>(layoutInfo));
        }
    }

    /** {@code ClearRetMsg}. @param eventId the request's id @param numTokens tokens cleared */
    record ClearRetMsg(String eventId, long numTokens) implements OrchRetMsg {
        public ClearRetMsg {
            Objects.requireNonNull(eventId, "eventId");
        }
    }

    /** {@code PinRetMsg}. @param eventId the request's id @param numTokens tokens pinned */
    record PinRetMsg(String eventId, long numTokens) implements OrchRetMsg {
        public PinRetMsg {
            Objects.requireNonNull(eventId, "eventId");
        }
    }

    /** {@code CompressRetMsg}. @param eventId the request's id @param numTokens tokens compressed */
    record CompressRetMsg(String eventId, long numTokens) implements OrchRetMsg {
        public CompressRetMsg {
            Objects.requireNonNull(eventId, "eventId");
        }
    }

    /** {@code DecompressRetMsg}. @param eventId the request's id @param numTokens tokens decompressed */
    record DecompressRetMsg(String eventId, long numTokens) implements OrchRetMsg {
        public DecompressRetMsg {
            Objects.requireNonNull(eventId, "eventId");
        }
    }

    /** {@code MoveRetMsg}. @param eventId the request's id @param numTokens tokens being moved */
    record MoveRetMsg(String eventId, long numTokens) implements OrchRetMsg {
        public MoveRetMsg {
            Objects.requireNonNull(eventId, "eventId");
        }
    }

    /**
     * {@code HealthRetMsg}.
     *
     * @param eventId    the request's id
     * @param errorCodes worker id to its error code (0 = healthy)
     */
    record HealthRetMsg(String eventId, Map<Integer, Integer> errorCodes) implements OrchRetMsg {
        public HealthRetMsg {
            Objects.requireNonNull(eventId, "eventId");
            errorCodes = Collections.unmodifiableMap(new LinkedHashMap<>(errorCodes));
        }
    }

    /** {@code CheckFinishRetMsg}. @param status the event's status */
    record CheckFinishRetMsg(String status) implements OrchRetMsg {
        public CheckFinishRetMsg {
            Objects.requireNonNull(status, "status");
        }
    }

    /**
     * {@code QueryWorkerInfoRetMsg}.
     *
     * @param eventId     the request's id
     * @param workerInfos the workers
     */
    record QueryWorkerInfoRetMsg(String eventId, List<WorkerInfo> workerInfos) implements OrchRetMsg {
        public QueryWorkerInfoRetMsg {
            Objects.requireNonNull(eventId, "eventId");
            workerInfos = List.copyOf(workerInfos);
        }
    }
}
