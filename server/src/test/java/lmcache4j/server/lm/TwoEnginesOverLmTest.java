package lmcache4j.server.lm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.remote.RemoteBackend;
import org.junit.jupiter.api.Test;

/** Two engines sharing this module's lm:// server as their remote tier: what one stores, the other retrieves intact. */
class TwoEnginesOverLmTest {
    private static final int LAYERS = 2;
    private static final int HEADS = 2;
    private static final int HEAD = 8;
    private static final int BLOCK = 16;
    private static final int BLOCKS = 64;
    private static final int CHUNK = 64;
    private static final int TOKENS = 192;
    private static final ModelMetadata MODEL = new ModelMetadata("synthetic/model", 1, 0, DType.FLOAT16, LAYERS, HEADS,
            HEAD, false);

    @Test
    void twoEnginesShareChunksThroughTheLmCacheServer() throws Exception {
        int[] tokens = new int[TOKENS];
        long[] slots = new long[TOKENS];
        for (int t = 0; t < TOKENS; t++) {
            tokens[t] = (t * 7919) % 128_000;
            slots[t] = (BLOCKS - 1 - t / BLOCK) * (long) BLOCK + t % BLOCK; // blocks in reverse: not the identity
        }
        try (LmCacheServer server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 64L << 20, Optional.empty(),
                16 << 20)) {
            String url = "lm://127.0.0.1:" + server.port();
            try (Arena arena = Arena.ofShared(); LMCacheEngine first = engine(url); LMCacheEngine second = engine(url)) {
                PagedKvCache kv = cache(arena);
                fill(kv, tokens, slots);
                first.store(tokens, null, kv, slots, Map.of());
                ((RemoteBackend) first.storage().tier(RemoteBackend.NAME).orElseThrow()).awaitPuts();
                assertEquals(TOKENS, second.lookup(tokens, Map.of(), null));
                PagedKvCache target = cache(arena);
                assertTrue(second.retrieve(tokens, null, target, slots, Map.of(), null)[TOKENS - 1]);
                for (int l = 0; l < LAYERS; l++) {
                    assertEquals(-1, kv.layers().get(l).mismatch(target.layers().get(l)), "layer " + l + " read back");
                }
            }
        }
    }

    private static LMCacheEngine engine(String remoteUrl) {
        double chunkGb = MODEL.chunkBytes(CHUNK) / (double) (1L << 30);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 8 * chunkGb).set("remote_url", remoteUrl).set("hash_seed", "0")
                .set("blocking_timeout_secs", 2).build();
        return LMCacheEngine.create(config, MODEL, KvConnector.host(), List.of());
    }

    private static PagedKvCache cache(Arena arena) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, HEADS, HEAD, DType.FLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            layers.add(arena.allocate(bytes, 64)); // zeroed: slots no token uses compare equal
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, HEADS, HEAD, DType.FLOAT16);
    }

    /** Values that depend on layer, plane, position, element and token, so a misplaced byte shows. */
    private static void fill(PagedKvCache kv, int[] tokens, long[] slots) {
        for (int l = 0; l < LAYERS; l++) {
            for (int p = 0; p < 2; p++) {
                for (int t = 0; t < tokens.length; t++) {
                    long base = kv.offset(p, slots[t]);
                    for (int e = 0; e < kv.hidden(); e++) {
                        kv.layers().get(l).set(ValueLayout.JAVA_SHORT, base + 2L * e,
                                (short) (tokens[t] * 31 + t * 7 + l * 1009 + p * 503 + e));
                    }
                }
            }
        }
    }
}
