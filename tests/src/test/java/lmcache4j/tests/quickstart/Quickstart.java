package lmcache4j.tests.quickstart;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;

/** Stores the KV of 1,000 tokens, looks them up, retrieves them into another paged cache, checks the bytes. */
public final class Quickstart {
    /** What one run did: tokens stored, found by the lookup, loaded by the retrieve, and tokens whose KV differs. */
    public record Result(int stored, int found, int loaded, int wrongTokens) {
    }

    static final int BLOCK_SIZE = 16; // tokens per block of the paged cache (vLLM's default)
    static final int BLOCKS = 128; // blocks per layer buffer

    public static void main(String[] args) {
        System.out.println(run());
    }

    public static Result run() {
        // LMCache's field names and defaults. environment(Map.of()) ignores LMCACHE_* variables and
        // LMCACHE_CONFIG_FILE; leave it out to read them as LMCache does. Add local_disk and
        // max_local_disk_size for a disk tier, remote_url for a remote one.
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", 256)
                .set("max_local_cpu_size", 0.25) // GiB of host memory for the CPU tier
                .set("hash_seed", "0") // the same seed in every process gives the same keys
                .build();
        // model name, tensor-parallel world size, this worker, KV dtype, layers, KV heads, head size, MLA
        ModelMetadata model = new ModelMetadata("my-org/my-model", 1, 0, DType.BFLOAT16, 4, 8, 128, false);

        try (Arena arena = Arena.ofConfined();
             LMCacheEngine engine = LMCacheEngine.create(config, model, KvConnector.host(), List.of())) {
            int[] tokens = new Random(1).ints(1_000, 0, 128_000).toArray();
            PagedKvCache computed = pagedCache(arena, model); // the KV a model computed for the tokens...
            fillWithNoise(computed);
            long[] computedSlots = slots(tokens.length, 0); // ...at these slots (block * BLOCK_SIZE + offset)

            PreparedRequest request = engine.prepare(tokens, Map.of()); // hashed once, used by every call below
            int stored = engine.store(request, computed, computedSlots); // 768: three full 256-token chunks

            PagedKvCache other = pagedCache(arena, model); // a later request's cache, other blocks
            long[] otherSlots = slots(tokens.length, 64);
            int found = engine.lookup(request, "request-1"); // pins the prefix it found...
            boolean[] loaded = engine.retrieve(request, other, otherSlots, "request-1"); // ...until this retrieve

            int loadedTokens = 0;
            int wrongTokens = 0;
            for (int t = 0; t < tokens.length; t++) {
                if (loaded[t]) {
                    loadedTokens++;
                    if (!sameKv(computed, computedSlots[t], other, otherSlots[t])) {
                        wrongTokens++;
                    }
                }
            }
            return new Result(stored, found, loadedTokens, wrongTokens);
        }
    }

    /** vLLM's FlashAttention layout: per layer, [2 (K, V), blocks, block size, KV heads, head size]. */
    static PagedKvCache pagedCache(Arena arena, ModelMetadata model) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK_SIZE, model.numKvHeads(),
                model.headSize(), model.kvDtype());
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < model.numLayers(); l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK_SIZE, model.numKvHeads(),
                model.headSize(), model.kvDtype());
    }

    static void fillWithNoise(PagedKvCache kv) {
        Random random = new Random(2);
        for (MemorySegment layer : kv.layers()) {
            for (long i = 0; i < layer.byteSize(); i += 8) {
                layer.set(ValueLayout.JAVA_LONG, i, random.nextLong());
            }
        }
    }

    /** Slots of {@code tokens} tokens in consecutive blocks from {@code firstBlock} on. */
    static long[] slots(int tokens, int firstBlock) {
        long[] slots = new long[tokens];
        for (int t = 0; t < tokens; t++) {
            slots[t] = (long) firstBlock * BLOCK_SIZE + t;
        }
        return slots;
    }

    /** Whether a token's K and V vectors in every layer are the same in both caches. */
    static boolean sameKv(PagedKvCache a, long slotA, PagedKvCache b, long slotB) {
        long n = a.vectorBytes();
        for (int l = 0; l < a.layerCount(); l++) {
            for (int kv = 0; kv < 2; kv++) {
                if (MemorySegment.mismatch(a.layers().get(l), a.offset(kv, slotA), a.offset(kv, slotA) + n,
                        b.layers().get(l), b.offset(kv, slotB), b.offset(kv, slotB) + n) != -1) {
                    return false;
                }
            }
        }
        return true;
    }

    private Quickstart() {
    }
}
