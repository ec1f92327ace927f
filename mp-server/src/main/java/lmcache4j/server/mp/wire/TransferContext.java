package lmcache4j.server.mp.wire;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code context} map of LMCache's prepare-store and prepare-retrieve responses
 * (docs/design/mp-server.md §6.2–6.3). With {@code slots} the worker copies through shared
 * memory (an empty list means "nothing to copy"); with no {@code slots} key at all a store falls
 * back to pickled tensors. Store contexts add {@code chunk_indices}: each slot's chunk position in
 * the key's range. Keys are written in the order {@code slots}, {@code chunk_indices}.
 *
 * @param slots the slots, or empty to write an empty map
 * @param chunkIndices the chunk positions of store slots; empty for retrieve contexts
 */
public record TransferContext(Optional<List<ShmSlot>> slots, Optional<List<Integer>> chunkIndices) {

    /** The empty map {@code {}}: a failed retrieve. */
    public static final TransferContext EMPTY = new TransferContext(Optional.empty(), Optional.empty());

    /** Copies the lists and refuses nulls. */
    public TransferContext {
        slots = Objects.requireNonNull(slots, "slots").map(List::copyOf);
        chunkIndices = Objects.requireNonNull(chunkIndices, "chunkIndices").map(List::copyOf);
    }

    /** A store context: slot {@code j} holds chunk {@code chunkIndices.get(j)} of the key's range. */
    public static TransferContext store(List<ShmSlot> slots, List<Integer> chunkIndices) {
        if (slots.size() != chunkIndices.size()) {
            throw new IllegalArgumentException(
                    slots.size() + " slots but " + chunkIndices.size() + " chunk indices (expected one per slot)");
        }
        return new TransferContext(Optional.of(slots), Optional.of(chunkIndices));
    }

    /** A retrieve context: one slot per chunk of the key, in key order. */
    public static TransferContext retrieve(List<ShmSlot> slots) {
        return new TransferContext(Optional.of(slots), Optional.empty());
    }
}
