package lmcache4j.server.mp.wire;

import java.util.Objects;

/**
 * LMCache's {@code PrepareRetrieveResponse} (docs/design/mp-server.md §6.3). Its {@code data}
 * field carries pickled tensors in LMCache's fallback mode, which lmcache4j never uses: it is
 * always written as empty bytes, and a decoded response must have it empty.
 *
 * @param success whether every chunk was found
 * @param context the slots to read from on success; {@link TransferContext#EMPTY} on failure
 */
public record PrepareRetrieveResponse(boolean success, TransferContext context) {

    /** Refuses null. */
    public PrepareRetrieveResponse {
        Objects.requireNonNull(context, "context");
    }

    /** The failure reply: {@code {success: false, data: b"", context: {}}}. */
    public static PrepareRetrieveResponse missing() {
        return new PrepareRetrieveResponse(false, TransferContext.EMPTY);
    }
}
