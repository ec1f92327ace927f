package lmcache4j.engine.events;

import java.util.Objects;
import java.util.OptionalLong;

/**
 * One KV-cache event as vLLM publishes it ({@code vllm/distributed/kv_events.py}): a block stored,
 * blocks removed, or everything cleared. lmcache4j's block is a chunk; its hash is the chunk
 * digest folded as vLLM folds block hashes ({@link KvEvents#blockHash}).
 */
public sealed interface KvEvent {
    /**
     * {@code BlockStored}: {@code blockHashes} now held in {@code medium}.
     *
     * @param parentBlockHash the hash of the chunk before the first one, empty for a prompt's first chunk
     *                        (or when this process no longer remembers it)
     * @param tokenIds        the tokens of the stored chunks (empty when no longer remembered)
     * @param blockSize       tokens per block: the engine's chunk size
     */
    record BlockStored(long[] blockHashes, OptionalLong parentBlockHash, int[] tokenIds, int blockSize, String medium)
            implements KvEvent {
        public BlockStored {
            Objects.requireNonNull(blockHashes, "blockHashes");
            Objects.requireNonNull(parentBlockHash, "parentBlockHash");
            Objects.requireNonNull(tokenIds, "tokenIds");
            Objects.requireNonNull(medium, "medium");
        }
    }

    /** {@code BlockRemoved}: {@code blockHashes} no longer held in {@code medium}. */
    record BlockRemoved(long[] blockHashes, String medium) implements KvEvent {
        public BlockRemoved {
            Objects.requireNonNull(blockHashes, "blockHashes");
            Objects.requireNonNull(medium, "medium");
        }
    }

    /** {@code AllBlocksCleared}: this engine holds nothing any more. */
    record AllBlocksCleared() implements KvEvent {
    }
}
