package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import lmcache4j.allocator.DType;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.remote.RemoteBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A shared tier holding a chunk of another shape under the same key (two deployments of one model
 * name with different head counts): the retrieve is a miss from that chunk on, and not one byte
 * of the paged cache is written.
 */
class StoredChunkMismatchTest {
    private static final int TOKENS = 128;

    private static LMCacheEngine engine(int heads, String url) {
        ModelMetadata model = new ModelMetadata("synthetic/model", 1, 0, DType.FLOAT16, SyntheticKv.LAYERS, heads,
                SyntheticKv.HEAD, false);
        double chunkGb = model.chunkBytes(64) / (double) (1L << 30);
        var config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 64).set("max_local_cpu_size", 4 * chunkGb)
                .set("remote_url", url).set("hash_seed", "0").build();
        return LMCacheEngine.create(config, model, KvConnector.host(), List.of());
    }

    @Test
    void aChunkOfAnotherShapeIsAMissAndWritesNothing(@TempDir Path dir) throws Exception {
        String url = "fs://" + dir;
        int[] tokens = SyntheticKv.tokens(TOKENS, 5);
        long[] slots = SyntheticKv.slots(TOKENS, 64, 5);
        try (Arena arena = Arena.ofShared(); LMCacheEngine writer = engine(SyntheticKv.HEADS, url);
             LMCacheEngine reader = engine(1, url)) {
            PagedKvCache kv = SyntheticKv.cache(arena, 64);
            SyntheticKv.compute(kv, tokens, slots, 0, TOKENS);
            assertEquals(TOKENS, writer.store(tokens, null, kv, slots, Map.of()));
            ((RemoteBackend) writer.storage().tier(RemoteBackend.NAME).orElseThrow()).awaitPuts();

            long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, 64, SyntheticKv.BLOCK, 1, SyntheticKv.HEAD,
                    DType.FLOAT16);
            List<MemorySegment> layers = List.of(arena.allocate(bytes, 64), arena.allocate(bytes, 64));
            PagedKvCache narrow = new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, 64, SyntheticKv.BLOCK, 1,
                    SyntheticKv.HEAD, DType.FLOAT16);
            assertEquals(TOKENS, reader.lookup(tokens, Map.of(), null), "the keys match: only the shape differs");

            boolean[] loaded = reader.retrieve(tokens, null, narrow, slots, Map.of(), null);

            assertArrayEquals(new boolean[TOKENS], loaded, "a chunk that does not fit is a miss");
            for (MemorySegment layer : layers) {
                assertEquals(-1, layer.mismatch(arena.allocate(bytes, 64)), "no byte of the paged cache was written");
            }
        }
    }
}
