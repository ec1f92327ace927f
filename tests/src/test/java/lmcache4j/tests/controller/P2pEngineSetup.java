package lmcache4j.tests.controller;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;

/**
 * One engine of the cross-process P2P tests: the model shape, the config (enable_controller and
 * enable_p2p on fixed loopback ports), a paged KV cache, and KV bytes that both processes compute
 * from the tokens alone, so the fetching side knows what every byte must be.
 */
record P2pEngineSetup(int layers, int kvHeads, int headSize, int chunkSize, int chunks) {
    static final int BLOCK = 16;
    /** The deployment's P2P token: engines read each other's KV only after a proof of it (enable_p2p needs one). */
    static final String P2P_TOKEN = "p2p-token-of-the-test-deployment";

    ModelMetadata model() {
        return new ModelMetadata("synthetic/p2p", 1, 0, DType.FLOAT16, layers, kvHeads, headSize, false);
    }

    int tokenCount() {
        return chunkSize * chunks;
    }

    long chunkBytes() {
        return model().chunkBytes(chunkSize);
    }

    /** @param peersPort this engine's transfer server port (fixed: it is told to the controller) */
    LMCacheEngineConfig config(String instanceId, int pullPort, int replyPort, int p2pPort, int timeoutMs) {
        return config(instanceId, pullPort, replyPort, p2pPort, timeoutMs, P2P_TOKEN);
    }

    /** As above, with {@code p2pToken} as this engine's P2P token (an outsider's, in the attack tests). */
    LMCacheEngineConfig config(String instanceId, int pullPort, int replyPort, int p2pPort, int timeoutMs, String p2pToken) {
        double gb = (chunks + 2) * (double) chunkBytes() / (1L << 30);
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", chunkSize).set("max_local_cpu_size", gb)
                .set("hash_seed", PromptChunks.SEED).set("enable_controller", true).set("lmcache_instance_id", instanceId)
                .set("controller_pull_url", "127.0.0.1:" + pullPort).set("controller_reply_url", "127.0.0.1:" + replyPort)
                .set("enable_p2p", true).set("p2p_host", "127.0.0.1").set("p2p_init_ports", List.of(p2pPort))
                .set("extra_config", Map.of("p2p_timeout_ms", timeoutMs, "p2p_token", p2pToken)).build();
    }

    LMCacheEngine engine(LMCacheEngineConfig config) {
        return LMCacheEngine.create(config, model(), KvConnector.host(), List.of());
    }

    int[] tokens(long seed) {
        return PromptChunks.randomTokens(seed, tokenCount());
    }

    long[] slots() {
        long[] slots = new long[tokenCount()];
        int blocks = tokenCount() / BLOCK;
        for (int t = 0; t < slots.length; t++) {
            slots[t] = (blocks - 1 - t / BLOCK) * (long) BLOCK + t % BLOCK; // blocks reversed: not the identity
        }
        return slots;
    }

    PagedKvCache cache(Arena arena) {
        int blocks = tokenCount() / BLOCK;
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, blocks, BLOCK, kvHeads, headSize, DType.FLOAT16);
        List<MemorySegment> segments = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            segments.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(segments, PagedLayout.FLASH_ATTENTION, blocks, BLOCK, kvHeads, headSize, DType.FLOAT16);
    }

    /** KV values from layer, plane, position, element and token: a misplaced or foreign byte shows. */
    void fill(PagedKvCache kv, int[] tokens, long[] slots) {
        for (int l = 0; l < layers; l++) {
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
