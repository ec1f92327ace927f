package lmcache4j.server.mp.store;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The identity of one stored object of the multiprocess server: one chunk's KV for one rank of one
 * model. The wire layer fills it from LMCache's {@code ObjectKey}; the store only compares keys.
 *
 * @param chunkHash the chunk's 32-byte hash, compared by content (copied in and out, so the key is immutable)
 * @param modelName the model the KV belongs to
 * @param kvRank the rank whose KV this is (for MLA, shared by every TP rank)
 * @param objectGroupId the object group (LMCache's hybrid-model KV groups)
 * @param cacheSalt the isolation salt; {@code ""} when none, the quota bucket
 */
public record MpObjectKey(byte[] chunkHash, String modelName, int kvRank, int objectGroupId, String cacheSalt) {
    /** The length of {@link #chunkHash()}. */
    public static final int HASH_BYTES = 32;

    /** Checks and copies. */
    public MpObjectKey {
        Objects.requireNonNull(chunkHash, "chunkHash");
        Objects.requireNonNull(modelName, "modelName");
        Objects.requireNonNull(cacheSalt, "cacheSalt");
        if (chunkHash.length != HASH_BYTES) {
            throw new IllegalArgumentException("chunk hash must be " + HASH_BYTES + " bytes, was " + chunkHash.length);
        }
        if (kvRank < 0 || objectGroupId < 0) {
            throw new IllegalArgumentException("kvRank and objectGroupId must not be negative: " + kvRank + ", " + objectGroupId);
        }
        chunkHash = chunkHash.clone();
    }

    /** A copy of the hash. */
    @Override
    public byte[] chunkHash() {
        return chunkHash.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MpObjectKey k && kvRank == k.kvRank && objectGroupId == k.objectGroupId
                && Arrays.equals(chunkHash, k.chunkHash) && modelName.equals(k.modelName) && cacheSalt.equals(k.cacheSalt);
    }

    @Override
    public int hashCode() {
        return ((Arrays.hashCode(chunkHash) * 31 + modelName.hashCode()) * 31 + cacheSalt.hashCode()) * 31
                + kvRank * 17 + objectGroupId;
    }

    @Override
    public String toString() {
        return "MpObjectKey[" + HexFormat.of().formatHex(chunkHash, 0, 8) + "…, " + modelName + ", rank " + kvRank
                + ", group " + objectGroupId + (cacheSalt.isEmpty() ? "" : ", salt '" + cacheSalt + "'") + "]";
    }
}
