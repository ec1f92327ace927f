package lmcache4j.server.mp.wire;

import java.util.Arrays;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * LMCache's {@code IPCCacheServerKey}: the token-based key every store, retrieve and lookup
 * carries (docs/design/mp-server.md §4.1). The server hashes {@code tokenIds} itself (§5), so the
 * key names a range {@code [start, end)} of the request's whole token sequence.
 *
 * <p>Token ids are unsigned 32-bit values (LMCache packs them as big-endian {@code uint32}) kept
 * in an {@code int[]}: read one with {@link Integer#toUnsignedLong(int)}. The record does not copy
 * the array (a prompt can hold millions of tokens); callers must not change it afterwards.
 * {@code equals} compares every component, arrays by content; LMCache's own equality leaves out
 * {@code requestId} and {@code numKvReaders}, see {@link #sameCacheIdentity}.
 *
 * @param modelName the model; never contains {@code @} (LMCache's object-key separator)
 * @param worldSize the tensor-parallel world size, 1–255 (it is packed into 8 bits of the kv rank)
 * @param workerId the worker's rank in {@code [0, worldSize)}, or empty on scheduler lookups
 * @param tokenIds the whole token sequence of the request (not the {@code [start, end)} slice)
 * @param start first token of the range (its bounds are checked against the tokens and the chunk
 *     size by {@link MpKeyExpansion}, as LMCache checks them when it hashes, not when it decodes)
 * @param end one past the last token of the range
 * @param requestId the session key (not part of cache identity)
 * @param cacheSalt per-user isolation salt: at most 128 characters, none of {@code @ / \ NUL}
 * @param numKvReaders read locks a lookup takes per object (0 = not sent, treated as 1)
 */
public record IpcCacheServerKey(String modelName, int worldSize, OptionalInt workerId, int[] tokenIds, int start,
        int end, String requestId, String cacheSalt, int numKvReaders) {

    /** LMCache's {@code _SALT_MAX_LEN}, in characters (code points). */
    public static final int MAX_SALT_CHARS = 128;
    /** The largest world size whose kv rank fits LMCache's 8-bit fields. */
    public static final int MAX_WORLD_SIZE = 255;

    /** Checks LMCache's invariants (salt, model name) and the world size and worker id the kv rank packs. */
    public IpcCacheServerKey {
        Objects.requireNonNull(modelName, "modelName");
        Objects.requireNonNull(workerId, "workerId");
        Objects.requireNonNull(tokenIds, "tokenIds");
        Objects.requireNonNull(requestId, "requestId");
        Objects.requireNonNull(cacheSalt, "cacheSalt");
        if (modelName.indexOf('@') >= 0) {
            throw new IllegalArgumentException("model_name must not contain '@' (got '" + modelName + "')");
        }
        if (worldSize < 1 || worldSize > MAX_WORLD_SIZE) {
            throw new IllegalArgumentException("world_size " + worldSize + " (expected 1.." + MAX_WORLD_SIZE + ")");
        }
        if (workerId.isPresent() && (workerId.getAsInt() < 0 || workerId.getAsInt() >= worldSize)) {
            throw new IllegalArgumentException(
                    "worker_id " + workerId.getAsInt() + " (expected 0.." + (worldSize - 1) + " or nil)");
        }
        checkSalt(cacheSalt);
        if (start < 0 || end < 0) {
            throw new IllegalArgumentException("range [" + start + ", " + end + ") (expected non-negative bounds)");
        }
        if (numKvReaders < 0) {
            throw new IllegalArgumentException("num_kv_readers " + numKvReaders + " (expected >= 0)");
        }
    }

    /** Refuses a salt LMCache's {@code __post_init__} refuses: too long or holding {@code @ / \ NUL}. */
    public static void checkSalt(String salt) {
        for (int i = 0; i < salt.length(); i++) {
            char c = salt.charAt(i);
            if (c == '@' || c == '/' || c == '\\' || c == '\0') {
                throw new IllegalArgumentException("cache_salt must not contain '@', '/', '\\' or NUL (found "
                        + (c == '\0' ? "NUL" : "'" + c + "'") + " at " + i + ")");
            }
        }
        int chars = salt.codePointCount(0, salt.length());
        if (chars > MAX_SALT_CHARS) {
            throw new IllegalArgumentException("cache_salt of " + chars + " characters (at most " + MAX_SALT_CHARS + ")");
        }
    }

    /** The read locks a lookup reserves per object: {@code numKvReaders}, or 1 when not sent. */
    public int effectiveKvReaders() {
        return numKvReaders == 0 ? 1 : numKvReaders;
    }

    /** LMCache's key equality: every field but {@code requestId} and {@code numKvReaders}. */
    public boolean sameCacheIdentity(IpcCacheServerKey other) {
        return modelName.equals(other.modelName) && worldSize == other.worldSize && workerId.equals(other.workerId)
                && Arrays.equals(tokenIds, other.tokenIds) && start == other.start && end == other.end
                && cacheSalt.equals(other.cacheSalt);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcCacheServerKey k && sameCacheIdentity(k) && requestId.equals(k.requestId)
                && numKvReaders == k.numKvReaders;
    }

    @Override
    public int hashCode() {
        return Objects.hash(modelName, worldSize, workerId, Arrays.hashCode(tokenIds), start, end, requestId,
                cacheSalt, numKvReaders);
    }

    /** A summary: the token ids are counted, not printed (a prompt can be millions long). */
    @Override
    public String toString() {
        return "IpcCacheServerKey[model_name=" + modelName + ", world_size=" + worldSize + ", worker_id="
                + (workerId.isPresent() ? workerId.getAsInt() : "nil") + ", tokens=" + tokenIds.length + ", start="
                + start + ", end=" + end + ", request_id=" + requestId + ", cache_salt=" + cacheSalt
                + ", num_kv_readers=" + numKvReaders + "]";
    }
}
