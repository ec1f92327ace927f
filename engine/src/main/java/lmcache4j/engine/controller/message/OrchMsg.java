package lmcache4j.engine.controller.message;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * LMCache's {@code OrchMsg} group: what an orchestrator (router, operator) asks the controller
 * (answered by an {@link OrchRetMsg} or an {@link ErrorMsg}).
 */
public sealed interface OrchMsg extends ControllerMessage {
    /**
     * {@code QueryInstMsg}: which instance runs at this address?
     *
     * @param eventId the request's id
     * @param ip      the address
     */
    record QueryInstMsg(String eventId, String ip) implements OrchMsg {
        public QueryInstMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(ip, "ip");
        }
    }

    /**
     * {@code LookupMsg}: who holds the longest cached prefix of these tokens?
     *
     * @param eventId the request's id
     * @param tokens  the prompt's token ids
     */
    record LookupMsg(String eventId, int[] tokens) implements OrchMsg {
        public LookupMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(tokens, "tokens");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof LookupMsg m && eventId.equals(m.eventId) && Arrays.equals(tokens, m.tokens);
        }

        @Override
        public int hashCode() {
            return eventId.hashCode() * 31 + Arrays.hashCode(tokens);
        }

        @Override
        public String toString() {
            return "LookupMsg[eventId=" + eventId + ", tokens=" + tokens.length + " tokens]";
        }
    }

    /**
     * {@code ClearMsg}: clear a location of an instance.
     *
     * @param eventId    the request's id
     * @param instanceId the instance
     * @param location   the tier
     */
    record ClearMsg(String eventId, String instanceId, String location) implements OrchMsg {
        public ClearMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(location, "location");
        }
    }

    /**
     * {@code PinMsg}: pin a token sequence's chunks in a location of an instance.
     *
     * @param eventId    the request's id
     * @param instanceId the instance
     * @param location   the tier
     * @param tokens     the token ids
     */
    record PinMsg(String eventId, String instanceId, String location, int[] tokens) implements OrchMsg {
        public PinMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(tokens, "tokens");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof PinMsg m && eventId.equals(m.eventId) && instanceId.equals(m.instanceId)
                    && location.equals(m.location) && Arrays.equals(tokens, m.tokens);
        }

        @Override
        public int hashCode() {
            return Objects.hash(eventId, instanceId, location) * 31 + Arrays.hashCode(tokens);
        }

        @Override
        public String toString() {
            return "PinMsg[eventId=" + eventId + ", instanceId=" + instanceId + ", location=" + location
                    + ", tokens=" + tokens.length + " tokens]";
        }
    }

    /**
     * {@code CompressMsg}.
     *
     * @param eventId    the request's id
     * @param instanceId the instance
     * @param method     the compression method
     * @param location   the tier
     * @param tokens     the token ids; empty means every chunk
     */
    record CompressMsg(String eventId, String instanceId, String method, String location, Optional<int[]> tokens)
            implements OrchMsg {
        public CompressMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(method, "method");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(tokens, "tokens");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof CompressMsg m && eventId.equals(m.eventId) && instanceId.equals(m.instanceId)
                    && method.equals(m.method) && location.equals(m.location) && ArrayValues.equal(tokens, m.tokens);
        }

        @Override
        public int hashCode() {
            return Objects.hash(eventId, instanceId, method, location) * 31 + ArrayValues.hash(tokens);
        }

        @Override
        public String toString() {
            return "CompressMsg[eventId=" + eventId + ", instanceId=" + instanceId + ", method=" + method
                    + ", location=" + location + ", tokens=" + ArrayValues.show(tokens) + "]";
        }
    }

    /**
     * {@code DecompressMsg}.
     *
     * @param eventId    the request's id
     * @param instanceId the instance
     * @param method     the compression method
     * @param location   the tier
     * @param tokens     the token ids; empty means every chunk
     */
    record DecompressMsg(String eventId, String instanceId, String method, String location, Optional<int[]> tokens)
            implements OrchMsg {
        public DecompressMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(instanceId, "instanceId");
            Objects.requireNonNull(method, "method");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(tokens, "tokens");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof DecompressMsg m && eventId.equals(m.eventId) && instanceId.equals(m.instanceId)
                    && method.equals(m.method) && location.equals(m.location) && ArrayValues.equal(tokens, m.tokens);
        }

        @Override
        public int hashCode() {
            return Objects.hash(eventId, instanceId, method, location) * 31 + ArrayValues.hash(tokens);
        }

        @Override
        public String toString() {
            return "DecompressMsg[eventId=" + eventId + ", instanceId=" + instanceId + ", method=" + method
                    + ", location=" + location + ", tokens=" + ArrayValues.show(tokens) + "]";
        }
    }

    /**
     * {@code MoveMsg}: move chunks from (instance, location) to (instance, location).
     *
     * @param eventId     the request's id
     * @param oldPosition (instance id, backend name) of the source
     * @param newPosition (instance id, backend name) of the target
     * @param tokens      the token ids; empty means every chunk
     * @param copy        keep the source copy (LMCache's default here: false)
     */
    record MoveMsg(String eventId, Position oldPosition, Position newPosition, Optional<int[]> tokens,
                   Optional<Boolean> copy) implements OrchMsg {
        public MoveMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(oldPosition, "oldPosition");
            Objects.requireNonNull(newPosition, "newPosition");
            Objects.requireNonNull(tokens, "tokens");
            Objects.requireNonNull(copy, "copy");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof MoveMsg m && eventId.equals(m.eventId) && oldPosition.equals(m.oldPosition)
                    && newPosition.equals(m.newPosition) && ArrayValues.equal(tokens, m.tokens) && copy.equals(m.copy);
        }

        @Override
        public int hashCode() {
            return Objects.hash(eventId, oldPosition, newPosition, copy) * 31 + ArrayValues.hash(tokens);
        }

        @Override
        public String toString() {
            return "MoveMsg[eventId=" + eventId + ", oldPosition=" + oldPosition + ", newPosition=" + newPosition
                    + ", tokens=" + ArrayValues.show(tokens) + ", copy=" + copy + "]";
        }
    }

    /**
     * {@code HealthMsg}: are the workers of an instance well?
     *
     * @param eventId    the request's id
     * @param instanceId the instance
     */
    record HealthMsg(String eventId, String instanceId) implements OrchMsg {
        public HealthMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(instanceId, "instanceId");
        }
    }

    /**
     * {@code CheckFinishMsg}: has an earlier request finished?
     *
     * @param eventId the id of the request asked about
     */
    record CheckFinishMsg(String eventId) implements OrchMsg {
        public CheckFinishMsg {
            Objects.requireNonNull(eventId, "eventId");
        }
    }

    /**
     * {@code QueryWorkerInfoMsg}: describe (some of) an instance's workers.
     *
     * @param eventId    the request's id
     * @param instanceId the instance
     * @param workerIds  the workers; empty means all
     */
    record QueryWorkerInfoMsg(String eventId, String instanceId, Optional<List<Integer>> workerIds) implements OrchMsg {
        public QueryWorkerInfoMsg {
            Objects.requireNonNull(eventId, "eventId");
            Objects.requireNonNull(instanceId, "instanceId");
            workerIds = workerIds.map(List::copyOf);
        }
    }
}
