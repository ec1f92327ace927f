package lmcache4j.engine;

import java.util.Optional;

import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.ChunkHash;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * The chunk digests this engine has hashed recently, by their 64-bit fold
 * ({@link ControllerKeys#fold}): what the lookup service's wire carries instead of the 32-byte
 * digest (LMCache sends chunk hashes as msgpack ints). A worker turns a scheduler's folded hashes
 * back into its keys here. Bounded: past {@code capacity} entries the oldest are forgotten (a
 * forgotten chunk is a lookup miss until the engine hashes that prompt again).
 *
 * <p>Thread-safe (one lock; recording costs a map insert per chunk, and only when the lookup
 * service is on).
 */
final class FoldedHashIndex {
    private final Long2ObjectHashMap<ChunkHash> byFold = new Long2ObjectHashMap<>();
    private final long[] order;
    private int next;

    FoldedHashIndex(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be >= 1, was " + capacity);
        }
        this.order = new long[capacity];
    }

    /** Remembers {@code hash} under its fold. */
    synchronized void record(ChunkHash hash) {
        long fold = ControllerKeys.fold(hash);
        if (byFold.put(fold, hash) != null) {
            return; // already remembered (or a colliding digest now wins the slot)
        }
        if (byFold.size() > order.length) {
            byFold.remove(order[next]);
        }
        order[next] = fold;
        next = (next + 1) % order.length;
    }

    /** The digest whose fold is {@code fold}, if this engine hashed it recently. */
    synchronized Optional<ChunkHash> resolve(long fold) {
        return Optional.ofNullable(byFold.get(fold));
    }

    synchronized int size() {
        return byFold.size();
    }
}
