package lmcache4j.server.mp.wire;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * LMCache's storage key for one chunk of one rank ({@code ObjectKey} in
 * {@code lmcache/v1/distributed/api.py}, docs/design/mp-server.md §5): the chunk's chain digest,
 * the model, the packed kv rank, the object group (always 0: single-group layouts) and the salt.
 * {@code equals} compares the digest by content. The digest array is not copied.
 *
 * @param chunkHash the chunk's 32-byte BLAKE3 chain digest
 * @param modelName the model (without {@code @})
 * @param kvRank {@link #kvRank(int, int)} of the key's world size and the object's rank
 * @param objectGroupId the KV group; 0 for the single-group layouts lmcache4j serves
 * @param cacheSalt the per-user isolation salt
 */
public record MpObjectKey(byte[] chunkHash, String modelName, long kvRank, int objectGroupId, String cacheSalt) {

    /** Refuses nulls and a digest of the wrong size; keeps its own copy of the digest. */
    public MpObjectKey {
        if (Objects.requireNonNull(chunkHash, "chunkHash").length != MpTokenHasher.DIGEST_BYTES) {
            throw new IllegalArgumentException(
                    "chunk hash of " + chunkHash.length + " bytes (expected " + MpTokenHasher.DIGEST_BYTES + ")");
        }
        Objects.requireNonNull(modelName, "modelName");
        Objects.requireNonNull(cacheSalt, "cacheSalt");
        chunkHash = chunkHash.clone(); // a map key: nobody may change it afterwards
    }

    /** A copy of the digest. */
    @Override
    public byte[] chunkHash() {
        return chunkHash.clone();
    }

    /**
     * LMCache's packed rank: {@code world_size<<24 | rank<<16 | world_size<<8 | rank}, the local
     * world size and rank being set to the global ones (a long, because for world sizes of 128 and
     * more the Python int exceeds a Java int's range).
     */
    public static long kvRank(int worldSize, int rank) {
        if (worldSize < 1 || worldSize > IpcCacheServerKey.MAX_WORLD_SIZE || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " of world size " + worldSize
                    + " (expected 0 <= rank < world_size <= " + IpcCacheServerKey.MAX_WORLD_SIZE + ")");
        }
        return ((long) worldSize << 24) | ((long) rank << 16) | ((long) worldSize << 8) | rank;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MpObjectKey k && Arrays.equals(chunkHash, k.chunkHash) && modelName.equals(k.modelName)
                && kvRank == k.kvRank && objectGroupId == k.objectGroupId && cacheSalt.equals(k.cacheSalt);
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.hashCode(chunkHash), modelName, kvRank, objectGroupId, cacheSalt);
    }

    /** The digest in hex. */
    @Override
    public String toString() {
        return "MpObjectKey[" + HexFormat.of().formatHex(chunkHash) + ", " + modelName + ", kv_rank=0x"
                + Long.toHexString(kvRank) + ", group=" + objectGroupId + ", salt=" + cacheSalt + "]";
    }
}
