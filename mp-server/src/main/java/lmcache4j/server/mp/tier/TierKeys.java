package lmcache4j.server.mp.tier;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.server.mp.store.ObjectLayout;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * The engine key an MP object is stored under in the lower tiers: model, world size, the rank as
 * worker id, the 32-byte chunk digest and the dtype, plus tags for what the engine key does not
 * carry: the salt (hex, so tenants never collide and no character breaks the key string), the
 * object group and the tensor shape (a different layout is a different key). Deterministic, so a
 * restarted server finds what it wrote before.
 */
final class TierKeys {
    private TierKeys() {
    }

    /** The tier key of {@code key} in {@code layout}; empty when the engine's key cannot carry it (a model with '@'). */
    static Optional<CacheEngineKey> of(MpObjectKey key, ObjectLayout layout) {
        long kvRank = key.kvRank();
        int worldSize = (int) ((kvRank >>> 8) & 0xff);
        int rank = (int) (kvRank & 0xff);
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("mpsalt", "s" + HexFormat.of().formatHex(key.cacheSalt().getBytes(StandardCharsets.UTF_8)));
        tags.put("mpgroup", Integer.toString(key.objectGroupId()));
        StringBuilder shape = new StringBuilder();
        for (int d : layout.shape().toArray()) {
            shape.append(shape.isEmpty() ? "" : "x").append(d);
        }
        tags.put("mpshape", shape.toString());
        try {
            return Optional.of(new CacheEngineKey(key.modelName(), worldSize, rank, ChunkHash.of(key.chunkHash()),
                    layout.dtype(), tags));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }
}
