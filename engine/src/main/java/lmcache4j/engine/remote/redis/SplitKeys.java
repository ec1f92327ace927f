package lmcache4j.engine.remote.redis;

import java.nio.charset.StandardCharsets;

import io.lettuce.core.cluster.SlotHash;
import lmcache4j.engine.key.CacheKey;

/**
 * The Redis keys of a chunk in the {@link RedisLayout.Split split layout}:
 * {@code {T}<key string>@l4js.m} for the manifest and {@code {T}<key string>@l4js.p<i>} for part
 * {@code i}, where {@code {T}} is a Redis Cluster hash tag. LMCache's keys end in {@code kv_bytes}
 * or {@code metadata}, these never do, so the two layouts cannot collide in one Redis.
 *
 * <p>The tags put the manifest and the parts of one chunk on slots spaced evenly around the 16384
 * slots, starting from a slot that depends on the key: a cluster's masters own slot ranges, so the
 * parts of every chunk spread over all of them (three masters and eight parts: three items each).
 * The tag is the first {@code {...}} of the key, so a key string holding braces does not change it.
 */
final class SplitKeys {
    static final String MANIFEST_SUFFIX = "@l4js.m";
    static final String PART_SUFFIX = "@l4js.p";

    private SplitKeys() {
    }

    /** The manifest's key: item 0, whose slot is the key's base slot whatever the part count, so readers find it first. */
    static byte[] manifest(CacheKey key) {
        String k = key.toKeyString();
        return keyOf(k, slotOf(k, 0, 1), MANIFEST_SUFFIX);
    }

    /** Part {@code i}'s key, of {@code parts}. */
    static byte[] part(CacheKey key, int i, int parts) {
        String k = key.toKeyString();
        return keyOf(k, slotOf(k, i + 1, parts), PART_SUFFIX + i);
    }

    /** The slot of item {@code item} (0 = the manifest, 1.. = the parts) of a chunk cut into {@code parts}. */
    static int slotOf(String keyString, int item, int parts) {
        int base = SlotHash.getSlot(keyString.getBytes(StandardCharsets.UTF_8));
        return (int) ((base + (long) item * SlotHash.SLOT_COUNT / (parts + 1)) % SlotHash.SLOT_COUNT);
    }

    private static byte[] keyOf(String keyString, int slot, String suffix) {
        return ("{" + Tags.TAG[slot] + "}" + keyString + suffix).getBytes(StandardCharsets.UTF_8);
    }

    /** For every slot, the shortest base-36 number that hashes to it (found once, in a few milliseconds). */
    static final class Tags {
        static final String[] TAG = build();

        private static String[] build() {
            String[] tags = new String[SlotHash.SLOT_COUNT];
            int found = 0;
            for (int n = 0; found < tags.length; n++) {
                String t = Integer.toString(n, 36);
                int slot = SlotHash.getSlot(t.getBytes(StandardCharsets.US_ASCII));
                if (tags[slot] == null) {
                    tags[slot] = t;
                    found++;
                }
            }
            return tags;
        }
    }
}
