package lmcache4j.engine.pd.wire;

import java.util.List;
import java.util.Objects;

/**
 * A receiver's answer to an {@link AllocRequest}: LMCache's {@code AllocResponse}.
 * {@code alreadySentIndexes} are the request's indexes whose chunks the receiver holds or is being
 * sent already; {@code remoteIndexes} has one entry for each other chunk, in order: where the sender
 * writes it.
 *
 * <p>Where lmcache4j differs: a remote index is a slot number the receiver resolves, never reused
 * (LMCache's is a buffer address NIXL writes to), so a write that arrives after its slot timed out is
 * refused instead of landing in memory given to another request; {@link #REFUSED} ({@code -1}) marks
 * a chunk for which the buffer had no room (LMCache's receiver waits for room; this one never
 * blocks, and refuses every later chunk of the request too, since a retrieve stops at the first
 * missing chunk); and {@code error}, empty when the request was served, says why a whole request
 * was refused (a shape or dtype another model's, a key of another model).
 */
public record AllocResponse(List<Integer> alreadySentIndexes, List<Long> remoteIndexes, String error) {
    /** A remote index that says the buffer had no room for this chunk. */
    public static final long REFUSED = -1;

    public AllocResponse {
        alreadySentIndexes = List.copyOf(alreadySentIndexes);
        remoteIndexes = List.copyOf(remoteIndexes);
        Objects.requireNonNull(error, "error");
    }

    /** A refusal of the whole request, saying why. */
    public static AllocResponse refused(String why) {
        return new AllocResponse(List.of(), List.of(), why);
    }
}
