package lmcache4j.engine.controller.message;

import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * LMCache's {@code ControlMsg} group: what the controller asks one worker on the worker's REP
 * socket (answered by a {@link ControlRetMsg} or an {@link ErrorMsg}). Tokens are token ids.
 */
public sealed interface ControlMsg extends ControllerMessage {
    /** The controller's id for this request. */
    String workerEventId();

    /**
     * {@code ClearWorkerMsg}: drop every chunk the worker holds in a location.
     *
     * @param workerEventId the request's id
     * @param location      the tier, by LMCache's backend name
     */
    record ClearWorkerMsg(String workerEventId, String location) implements ControlMsg {
        public ClearWorkerMsg {
            Objects.requireNonNull(workerEventId, "workerEventId");
            Objects.requireNonNull(location, "location");
        }
    }

    /**
     * {@code PinWorkerMsg}: pin the chunks of a token sequence in a location.
     *
     * @param workerEventId the request's id
     * @param location      the tier
     * @param tokens        the token ids
     */
    record PinWorkerMsg(String workerEventId, String location, int[] tokens) implements ControlMsg {
        public PinWorkerMsg {
            Objects.requireNonNull(workerEventId, "workerEventId");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(tokens, "tokens");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof PinWorkerMsg m && workerEventId.equals(m.workerEventId) && location.equals(m.location)
                    && Arrays.equals(tokens, m.tokens);
        }

        @Override
        public int hashCode() {
            return Objects.hash(workerEventId, location) * 31 + Arrays.hashCode(tokens);
        }

        @Override
        public String toString() {
            return "PinWorkerMsg[workerEventId=" + workerEventId + ", location=" + location + ", tokens="
                    + tokens.length + " tokens]";
        }
    }

    /**
     * {@code CompressWorkerMsg} (lmcache4j answers it with an {@link ErrorMsg}: not supported).
     *
     * @param workerEventId the request's id
     * @param method        the compression method
     * @param location      the tier
     * @param tokens        the token ids; empty means every chunk
     */
    record CompressWorkerMsg(String workerEventId, String method, String location, Optional<int[]> tokens)
            implements ControlMsg {
        public CompressWorkerMsg {
            Objects.requireNonNull(workerEventId, "workerEventId");
            Objects.requireNonNull(method, "method");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(tokens, "tokens");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof CompressWorkerMsg m && workerEventId.equals(m.workerEventId)
                    && method.equals(m.method) && location.equals(m.location) && ArrayValues.equal(tokens, m.tokens);
        }

        @Override
        public int hashCode() {
            return Objects.hash(workerEventId, method, location) * 31 + ArrayValues.hash(tokens);
        }

        @Override
        public String toString() {
            return "CompressWorkerMsg[workerEventId=" + workerEventId + ", method=" + method + ", location="
                    + location + ", tokens=" + ArrayValues.show(tokens) + "]";
        }
    }

    /**
     * {@code DecompressWorkerMsg} (lmcache4j answers it with an {@link ErrorMsg}: not supported).
     *
     * @param workerEventId the request's id
     * @param method        the compression method
     * @param location      the tier
     * @param tokens        the token ids; empty means every chunk
     */
    record DecompressWorkerMsg(String workerEventId, String method, String location, Optional<int[]> tokens)
            implements ControlMsg {
        public DecompressWorkerMsg {
            Objects.requireNonNull(workerEventId, "workerEventId");
            Objects.requireNonNull(method, "method");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(tokens, "tokens");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof DecompressWorkerMsg m && workerEventId.equals(m.workerEventId)
                    && method.equals(m.method) && location.equals(m.location) && ArrayValues.equal(tokens, m.tokens);
        }

        @Override
        public int hashCode() {
            return Objects.hash(workerEventId, method, location) * 31 + ArrayValues.hash(tokens);
        }

        @Override
        public String toString() {
            return "DecompressWorkerMsg[workerEventId=" + workerEventId + ", method=" + method + ", location="
                    + location + ", tokens=" + ArrayValues.show(tokens) + "]";
        }
    }

    /**
     * {@code MoveWorkerMsg}: move (lmcache4j: prefetch disk to CPU) the chunks of a token sequence.
     *
     * @param workerEventId the request's id
     * @param oldPosition   the source tier's backend name
     * @param newPosition   (target URL, target backend name)
     * @param tokens        the token ids; empty means every chunk
     * @param copy          keep the source copy (LMCache's default: true)
     */
    record MoveWorkerMsg(String workerEventId, String oldPosition, Position newPosition, Optional<int[]> tokens,
                         Optional<Boolean> copy) implements ControlMsg {
        public MoveWorkerMsg {
            Objects.requireNonNull(workerEventId, "workerEventId");
            Objects.requireNonNull(oldPosition, "oldPosition");
            Objects.requireNonNull(newPosition, "newPosition");
            Objects.requireNonNull(tokens, "tokens");
            Objects.requireNonNull(copy, "copy");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof MoveWorkerMsg m && workerEventId.equals(m.workerEventId)
                    && oldPosition.equals(m.oldPosition) && newPosition.equals(m.newPosition)
                    && ArrayValues.equal(tokens, m.tokens) && copy.equals(m.copy);
        }

        @Override
        public int hashCode() {
            return Objects.hash(workerEventId, oldPosition, newPosition, copy) * 31 + ArrayValues.hash(tokens);
        }

        @Override
        public String toString() {
            return "MoveWorkerMsg[workerEventId=" + workerEventId + ", oldPosition=" + oldPosition + ", newPosition="
                    + newPosition + ", tokens=" + ArrayValues.show(tokens) + ", copy=" + copy + "]";
        }
    }

    /**
     * {@code HealthWorkerMsg}: is the worker well? (answered by {@link ControlRetMsg.HealthWorkerRetMsg})
     *
     * @param workerEventId the request's id
     */
    record HealthWorkerMsg(String workerEventId) implements ControlMsg {
        public HealthWorkerMsg {
            Objects.requireNonNull(workerEventId, "workerEventId");
        }
    }

    /**
     * {@code CheckFinishWorkerMsg}: has an earlier (asynchronous) request finished?
     *
     * @param workerEventId the id of the request asked about
     */
    record CheckFinishWorkerMsg(String workerEventId) implements ControlMsg {
        public CheckFinishWorkerMsg {
            Objects.requireNonNull(workerEventId, "workerEventId");
        }
    }
}
