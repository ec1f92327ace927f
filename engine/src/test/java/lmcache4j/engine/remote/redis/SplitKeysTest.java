package lmcache4j.engine.remote.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;

import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.storage.TestChunks;

/** {@link SplitKeys}: never LMCache's keys, and a chunk's items on evenly spread slots. */
class SplitKeysTest {
    private static String text(byte[] key) {
        return new String(key, StandardCharsets.UTF_8);
    }

    @Test
    void everySlotHasATagThatHashesToIt() {
        for (int slot = 0; slot < SlotHash.SLOT_COUNT; slot++) {
            assertEquals(slot, SlotHash.getSlot(SplitKeys.Tags.TAG[slot]), "tag of slot " + slot);
        }
    }

    @Test
    void itemsLandOnTheirSlotsSpreadOverThreeEqualMastersAndNeverLookLikeLmCachesKeys() {
        int[] perMaster = new int[3];
        for (int k = 0; k < 200; k++) {
            CacheEngineKey key = TestChunks.key(k);
            int parts = 8;
            Set<Integer> slots = new HashSet<>();
            int[] items = new int[3];
            for (int i = -1; i < parts; i++) {
                byte[] redisKey = i < 0 ? SplitKeys.manifest(key) : SplitKeys.part(key, i, parts);
                String s = text(redisKey);
                assertFalse(s.endsWith("kv_bytes") || s.endsWith("metadata"), s);
                assertTrue(s.startsWith("{") && s.contains("}" + key.toKeyString() + "@l4js."), s);
                int slot = SlotHash.getSlot(redisKey);
                assertEquals(SplitKeys.slotOf(key.toKeyString(), i + 1, parts), slot, s);
                slots.add(slot);
                items[slot * 3 / SlotHash.SLOT_COUNT]++;
            }
            assertEquals(parts + 1, slots.size(), "two items of one chunk share a slot");
            for (int m = 0; m < 3; m++) {
                assertEquals(3, items[m], "9 items over 3 equal masters, chunk " + k);
                perMaster[m] += items[m];
            }
        }
        assertEquals(600, perMaster[0]);
    }

    @Test
    void aKeyStringWithBracesKeepsOurTag() {
        CacheEngineKey key = new CacheEngineKey("org/{model}", 1, 0, ChunkHash.of(new byte[] {1, 2, 3}), DType.BFLOAT16);
        byte[] part = SplitKeys.part(key, 2, 4);
        assertEquals(SplitKeys.slotOf(key.toKeyString(), 3, 4), SlotHash.getSlot(part));
    }
}
