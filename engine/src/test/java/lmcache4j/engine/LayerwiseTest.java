package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import org.junit.jupiter.api.Test;

/** Layer-by-layer store and retrieve, advanced the way a model's forward pass would. */
class LayerwiseTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;

    private static LMCacheEngine engine(int chunks) {
        double gb = chunks * SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", gb * 1.2).set("hash_seed", "0").set("use_layerwise", true).build();
        return LMCacheEngine.create(config, SyntheticKv.model(), KvConnector.host(), List.of());
    }

    @Test
    void storeLayerThenRetrieveLayerRoundTripsEveryElement() {
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine(8)) {
            PagedKvCache source = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(160, 11);
            long[] slots = SyntheticKv.slots(160, BLOCKS, 11);
            try (LayerwiseStore store = engine.storeLayer(tokens, null, source, slots, Map.of())) {
                for (int l = 0; l < store.layers(); l++) {
                    SyntheticKv.compute(source, tokens, slots, 0, 160); // the model writes layer l (all layers here)
                    store.layerReady();
                }
                assertEquals(128, store.finish());
            }
            assertEquals(128, engine.lookup(tokens, Map.of(), "lw"));
            PagedKvCache target = SyntheticKv.cache(arena, BLOCKS);
            long[] targetSlots = SyntheticKv.slots(160, BLOCKS, 12);
            boolean[] mask;
            try (LayerwiseRetrieve retrieve = engine.retrieveLayer(tokens, null, target, targetSlots, Map.of(), "lw")) {
                assertEquals(128, retrieve.tokens());
                for (int l = 0; l < SyntheticKv.LAYERS; l++) {
                    retrieve.awaitLayer();
                }
                mask = retrieve.finish();
            }
            for (int t = 0; t < 160; t++) {
                assertEquals(t < 128, mask[t], "token " + t);
            }
            assertEquals(0, SyntheticKv.mismatches(target, tokens, targetSlots, 0, 128));
            var stats = engine.storage().cpu().allocator().stats();
            assertEquals(0, stats.pinnedObjects());
            assertEquals(engine.storage().cpu().size(), stats.liveObjects());
            assertEquals(2 * SyntheticKv.LAYERS, engine.storage().cpu().size(), "one object per chunk and layer");
        }
    }

    @Test
    void anAbandonedStoreReleasesEverythingAndStepsAreCounted() {
        try (Arena arena = Arena.ofShared(); LMCacheEngine engine = engine(8)) {
            PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
            int[] tokens = SyntheticKv.tokens(128, 13);
            long[] slots = SyntheticKv.slots(128, BLOCKS, 13);
            SyntheticKv.compute(kv, tokens, slots, 0, 128);
            try (LayerwiseStore store = engine.storeLayer(tokens, null, kv, slots, Map.of())) {
                store.layerReady(); // one layer of two, then abandoned
                assertThrows(IllegalStateException.class, store::finish);
            }
            assertEquals(0, engine.lookup(tokens, Map.of(), null), "a chunk is cached only when all its layers are");
            try (LayerwiseStore store = engine.storeLayer(tokens, null, kv, slots, Map.of())) {
                store.layerReady();
                store.layerReady();
                assertThrows(IllegalStateException.class, store::layerReady);
                store.finish();
            }
            assertEquals(128, engine.lookup(tokens, Map.of(), null));
            LayerwiseRetrieve partial = engine.retrieveLayer(tokens, null, kv, slots, Map.of(), null);
            partial.awaitLayer();
            partial.close(); // abandoned after one layer: references released
            var stats = engine.storage().cpu().allocator().stats();
            assertEquals(engine.storage().cpu().size(), stats.liveObjects());
            assertTrue(stats.liveObjects() > 0);
        }
    }
}
