package lmcache4j.server.mp.wire;

import java.util.ArrayList;
import java.util.List;

/**
 * Expands an {@link IpcCacheServerKey} into the storage keys it covers (LMCache's
 * {@code ipc_key_to_object_keys}, docs/design/mp-server.md §5): the chunks
 * {@code [start/chunk, end/chunk)} of the chain hashed from token 0; one object per chunk for a
 * key with a worker id, or {@code world_size} objects per chunk, chunk-major and rank-minor
 * ({@code [c0r0, c0r1, …, c1r0, …]}), for a scheduler key without one.
 */
public final class MpKeyExpansion {
    private MpKeyExpansion() {
    }

    /**
     * Updates {@code chain} (the session's) to the key's tokens and returns the key's object keys.
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} unless
     *     {@code start <= end <= len(token_ids)} and both are multiples of the chain's chunk size
     *     (LMCache fails such a call too)
     */
    public static List<MpObjectKey> objectKeys(IpcCacheServerKey key, MpHashChain chain) throws MpProtocolException {
        int chunkSize = chain.chunkSize();
        if (key.start() > key.end() || key.end() > key.tokenIds().length) {
            throw new MpProtocolException(MpDropReason.BAD_ARGUMENT, "range [" + key.start() + ", " + key.end()
                    + ") of a " + key.tokenIds().length + "-token sequence (expected start <= end <= len(token_ids))");
        }
        if (key.start() % chunkSize != 0 || key.end() % chunkSize != 0) {
            throw new MpProtocolException(MpDropReason.BAD_ARGUMENT, "range [" + key.start() + ", " + key.end()
                    + ") is not aligned to the chunk size " + chunkSize + " (start and end must be multiples of it)");
        }
        chain.update(key.tokenIds());
        int first = key.start() / chunkSize;
        int last = key.end() / chunkSize; // end <= len(token_ids), so every chunk below last is full and hashed
        int ranks = key.workerId().isPresent() ? 1 : key.worldSize();
        List<MpObjectKey> keys = new ArrayList<>((last - first) * ranks);
        for (int c = first; c < last; c++) {
            byte[] hash = chain.hash(c);
            if (key.workerId().isPresent()) {
                keys.add(objectKey(key, hash, key.workerId().getAsInt()));
            } else {
                for (int r = 0; r < ranks; r++) {
                    keys.add(objectKey(key, hash, r));
                }
            }
        }
        return keys;
    }

    private static MpObjectKey objectKey(IpcCacheServerKey key, byte[] hash, int rank) {
        return new MpObjectKey(hash, key.modelName(), MpObjectKey.kvRank(key.worldSize(), rank), 0, key.cacheSalt());
    }
}
