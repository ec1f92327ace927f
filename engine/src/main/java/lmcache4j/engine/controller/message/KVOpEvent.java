package lmcache4j.engine.controller.message;

import java.util.Objects;

/**
 * LMCache's {@code KVOpEvent}: one admit or evict inside a {@link WorkerMsg.BatchedKVOperationMsg}
 * (an untagged struct: a map of its three fields).
 *
 * @param opType admit or evict
 * @param key    the chunk key, 64 bits (see {@code ControllerKeys})
 * @param seqNum the sequence number of this operation for its (worker, location)
 */
public record KVOpEvent(OpType opType, long key, long seqNum) {
    public KVOpEvent {
        Objects.requireNonNull(opType, "opType");
    }
}
