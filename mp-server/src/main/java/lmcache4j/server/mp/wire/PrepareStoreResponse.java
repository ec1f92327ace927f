package lmcache4j.server.mp.wire;

import java.util.Objects;

/**
 * LMCache's {@code PrepareStoreResponse}: the slots a worker writes a store's chunks into
 * (docs/design/mp-server.md §6.2).
 *
 * @param context where to write; an empty slot list means every chunk is already cached
 */
public record PrepareStoreResponse(TransferContext context) {

    /** Refuses null. */
    public PrepareStoreResponse {
        Objects.requireNonNull(context, "context");
    }
}
