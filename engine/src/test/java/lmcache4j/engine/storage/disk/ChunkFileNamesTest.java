package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

class ChunkFileNamesTest {
    @Test
    void slash_becomes_dash_like_lmcache_and_safe_characters_stay() {
        assertEquals("org-model@1@0@00ff@bfloat16.lmc", ChunkFileNames.fileName("org/model@1@0@00ff@bfloat16"));
        assertEquals("m@1@0@ab@half@user%alice.lmc", ChunkFileNames.fileName("m@1@0@ab@half@user%alice"));
    }

    @Test
    void the_mapping_is_injective_on_look_alike_keys() {
        List<String> keys = List.of("a/b@1", "a-b@1", "a~2Db@1", "a~2Fb@1", "a b@1", "a_b@1", "a\\b@1", "a:b@1", "é@1",
                "e\u0301@1", ".hidden@1", "~2Ehidden@1", "\uD83D\uDE00@1", "a//b@1", "a--b@1");
        Set<String> names = new HashSet<>();
        for (String k : keys) {
            String n = ChunkFileNames.fileName(k);
            assertTrue(names.add(n), "collision on " + n);
            assertFalse(n.contains("/") || n.startsWith(".") || n.contains("\0"), n);
            assertTrue(n.chars().allMatch(c -> c < 128), n);
        }
    }

    @Test
    void long_keys_are_shortened_with_their_digest_and_stay_distinct() {
        String base = "x".repeat(300) + "@1@0@";
        String a = ChunkFileNames.fileName(base + "aa");
        String b = ChunkFileNames.fileName(base + "ab");
        assertNotEquals(a, b);
        assertEquals(ChunkFileNames.MAX_STEM + ChunkFileNames.SUFFIX.length(), a.length());
        assertTrue(a.contains("~~"));
        assertTrue((a + ".tmp-4294967296-9223372036854775807").getBytes(StandardCharsets.UTF_8).length <= 255);
        String exact = "y".repeat(ChunkFileNames.MAX_STEM);
        assertEquals(exact + ".lmc", ChunkFileNames.fileName(exact), "a stem of exactly the limit is kept whole");
    }

    @Test
    void temp_names_are_recognised() {
        assertTrue(ChunkFileNames.isTemp("k@1.lmc.tmp-12-3"));
        assertTrue(ChunkFileNames.isTemp(".probe.lmc.tmp-12-3"));
        assertFalse(ChunkFileNames.isTemp("k@1.lmc"));
        // only the exact form the cache writes: another program's look-alike is not a temp file
        assertFalse(ChunkFileNames.isTemp("k@1.lmc.tmp-full"));
        assertFalse(ChunkFileNames.isTemp("k@1.lmc.tmp-12-"));
        assertFalse(ChunkFileNames.isTemp("k@1.lmc.tmp-12-3.bak"));
        assertFalse(ChunkFileNames.isTemp("notes.txt.tmp-12-3"));
    }
}
