package lmcache4j.server.p2p;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
import lmcache4j.engine.p2p.P2pBackend;
import lmcache4j.engine.p2p.PeerEngines;
import lmcache4j.engine.p2p.PeerLocator;

/** Engines with enable_p2p, their KV caches and a prompt whose every byte depends on where it sits. */
final class P2pEngines {
    static final int LAYERS = 2;
    static final int HEADS = 2;
    static final int HEAD = 8;
    static final int BLOCK = 16;
    static final int BLOCKS = 64;
    static final int CHUNK = 64;
    static final int TOKENS = 192;
    static final ModelMetadata MODEL = new ModelMetadata("synthetic/model", 1, 0, DType.FLOAT16, LAYERS, HEADS, HEAD, false);

    private P2pEngines() {
    }

    /** The deployment's P2P token in these tests (an engine with enable_p2p needs one). */
    static final String SECRET = "p2p-secret-of-the-deployment";
    static final Optional<String> TOKEN = Optional.of(SECRET);

    static LMCacheEngineConfig config(int timeoutMs) {
        return config(SECRET, timeoutMs);
    }

    static LMCacheEngineConfig config(String token, int timeoutMs) {
        double chunkGb = MODEL.chunkBytes(CHUNK) / (double) (1L << 30);
        Map<String, Object> extra = new java.util.HashMap<>();
        extra.put("p2p_timeout_ms", timeoutMs);
        extra.put("p2p_token", token);
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 8 * chunkGb).set("hash_seed", "0").set("enable_p2p", true)
                .set("p2p_host", "127.0.0.1").set("p2p_init_ports", List.of(0)).set("extra_config", extra).build();
    }

    static LMCacheEngine engine(LMCacheEngineConfig config, PeerLocator locator, String instanceId) {
        return PeerEngines.create(config, MODEL, KvConnector.host(), locator, instanceId);
    }

    static P2pBackend p2pTier(LMCacheEngine engine) {
        return (P2pBackend) engine.storage().tier(P2pBackend.NAME).orElseThrow();
    }

    static int[] tokens(int salt) {
        int[] tokens = new int[TOKENS];
        for (int t = 0; t < TOKENS; t++) {
            tokens[t] = (t * 7919 + salt) % 128_000;
        }
        return tokens;
    }

    static long[] slots() {
        long[] slots = new long[TOKENS];
        for (int t = 0; t < TOKENS; t++) {
            slots[t] = (BLOCKS - 1 - t / BLOCK) * (long) BLOCK + t % BLOCK; // blocks in reverse: not the identity
        }
        return slots;
    }

    static PagedKvCache cache(Arena arena) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, HEADS, HEAD, DType.FLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            layers.add(arena.allocate(bytes, 64)); // zeroed: slots no token uses compare equal
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, HEADS, HEAD, DType.FLOAT16);
    }

    /** Values that depend on layer, plane, position, element and token, so a misplaced byte shows. */
    static void fill(PagedKvCache kv, int[] tokens, long[] slots) {
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

    /** -1 when every layer of {@code a} equals {@code b}'s, else the first layer that differs. */
    static int firstDifferentLayer(PagedKvCache a, PagedKvCache b) {
        for (int l = 0; l < LAYERS; l++) {
            if (a.layers().get(l).mismatch(b.layers().get(l)) != -1) {
                return l;
            }
        }
        return -1;
    }
}
