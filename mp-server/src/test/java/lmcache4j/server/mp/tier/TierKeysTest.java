package lmcache4j.server.mp.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.server.mp.store.ObjectLayout;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * The key an MP object is stored under in the lower tiers carries the world size and rank the
 * object's key encodes: a chunk stored by one tensor-parallel layout is never found by another
 * (PIT run M1's survivor `TierKeys:28`, a world size read as 255 whatever it was).
 */
class TierKeysTest {
    private static final ObjectLayout LAYOUT = ObjectLayout.kv(2, 16, 8, DType.FLOAT16);

    private static CacheEngineKey key(int worldSize, int rank) {
        return TierKeys.of(new MpObjectKey(new byte[32], "model", MpObjectKey.kvRank(worldSize, rank), 0, ""), LAYOUT)
                .orElseThrow();
    }

    @Test
    void theTierKeyCarriesTheWorldSizeAndRankOfTheObjectsKey() {
        for (int worldSize : new int[] {1, 2, 8, 128, 255}) {
            for (int rank : new int[] {0, worldSize - 1}) {
                CacheEngineKey k = key(worldSize, rank);
                assertEquals(worldSize, k.worldSize(), "world size of " + k);
                assertEquals(rank, k.workerId(), "rank of " + k);
            }
        }
    }

    @Test
    void theSameChunkUnderAnotherWorldSizeIsAnotherKey() {
        assertNotEquals(key(1, 0), key(2, 0), "rank 0 of a world of 2 does not answer a world of 1");
        assertNotEquals(key(2, 0), key(2, 1));
        assertEquals(key(2, 1), key(2, 1), "deterministic: a restarted server finds what it wrote");
        assertTrue(key(2, 1).toKeyString().contains("@2@1@"), key(2, 1).toKeyString());
    }

    /**
     * The key names the chunk's file on disk, so its form is what a restarted server, or one of the next
     * version, looks its files up by; the shape tag also keeps two layouts apart whose dimensions would
     * run together without their separators (2, 22 and 22, 2).
     */
    @Test
    void theKeyStringIsStableAndTellsShapesApart() {
        MpObjectKey key = new MpObjectKey(new byte[32], "model", MpObjectKey.kvRank(2, 1), 3, "t");
        assertEquals("model@2@1@" + "00".repeat(32) + "@half@mpsalt%s74@mpgroup%3@mpshape%2x2x16x8",
                TierKeys.of(key, LAYOUT).orElseThrow().toKeyString());
        CacheEngineKey a = TierKeys.of(key, ObjectLayout.kv(2, 22, 8, DType.FLOAT16)).orElseThrow();
        CacheEngineKey b = TierKeys.of(key, ObjectLayout.kv(22, 2, 8, DType.FLOAT16)).orElseThrow();
        assertNotEquals(a, b, a.toKeyString() + " and " + b.toKeyString());
    }
}
