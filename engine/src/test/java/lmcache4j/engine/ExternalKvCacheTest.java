package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;

/**
 * KV in its owner's layout ({@link ExternalKvCache}) goes through the same chunks as a paged
 * cache's: what one stores the other retrieves byte for byte, the prefix rule holds, and a cache
 * that does not fit the model or the request is refused with the reason.
 */
class ExternalKvCacheTest {
    private static final int LAYERS = 3;
    private static final int HEADS = 2;
    private static final int HEAD = 16;
    private static final int HIDDEN = HEADS * HEAD;
    private static final int BLOCK = 16;
    private static final ModelMetadata MODEL = new ModelMetadata("ext/model", 1, 0, DType.FLOAT32, LAYERS, HEADS, HEAD, false);

    /** Positions in one segment per layer and plane: {@code [capacity, hidden]} floats. */
    static class RowsKv implements ExternalKvCache {
        final MemorySegment[][] planes;
        final int capacity;
        int gathers;

        RowsKv(Arena arena, int capacity) {
            this.capacity = capacity;
            planes = new MemorySegment[2][LAYERS];
            for (int p = 0; p < 2; p++) {
                for (int l = 0; l < LAYERS; l++) {
                    planes[p][l] = arena.allocate((long) capacity * HIDDEN * Float.BYTES, 64);
                }
            }
        }

        @Override public DType dtype() { return DType.FLOAT32; }
        @Override public int layerCount() { return LAYERS; }
        @Override public int numKvHeads() { return HEADS; }
        @Override public int headSize() { return HEAD; }
        @Override public int capacity() { return capacity; }

        @Override
        public void gather(int start, int end, MemorySegment chunk) {
            gathers++;
            copy(start, end, chunk, true);
        }

        @Override
        public void scatter(MemorySegment chunk, int start, int end) {
            copy(start, end, chunk, false);
        }

        private void copy(int start, int end, MemorySegment chunk, boolean out) {
            long row = (long) HIDDEN * Float.BYTES;
            int tokens = end - start;
            assertEquals(2L * LAYERS * tokens * row, chunk.byteSize(), "the chunk is [2, layers, tokens, hidden]");
            for (int p = 0; p < 2; p++) {
                for (int l = 0; l < LAYERS; l++) {
                    long c = ((long) p * LAYERS + l) * tokens * row;
                    if (out) {
                        MemorySegment.copy(planes[p][l], start * row, chunk, c, tokens * row);
                    } else {
                        MemorySegment.copy(chunk, c, planes[p][l], start * row, tokens * row);
                    }
                }
            }
        }
    }

    private static LMCacheEngine engine() {
        return LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", 64)
                .set("max_local_cpu_size", 0.02).set("hash_seed", "0").build(), MODEL, KvConnector.host(1), List.of());
    }

    private static PagedKvCache paged(Arena arena, int blocks) {
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            layers.add(arena.allocate(PagedKvCache.layerBytes(PagedLayout.FLASH_INFER, blocks, BLOCK, HEADS, HEAD,
                    DType.FLOAT32), 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_INFER, blocks, BLOCK, HEADS, HEAD, DType.FLOAT32);
    }

    private static void noise(MemorySegment s, long seed) {
        Random r = new Random(seed);
        for (long i = 0; i < s.byteSize(); i += 4) {
            s.set(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, i, r.nextFloat());
        }
    }

    @Test
    void whatAnExternalCacheStoresAPagedCacheRetrievesAndBack() {
        int tokens = 200; // three full 64-token chunks and a tail
        int[] ids = new Random(1).ints(tokens, 0, 30_000).toArray();
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine()) {
            RowsKv source = new RowsKv(arena, 512);
            for (MemorySegment[] plane : source.planes) {
                for (MemorySegment s : plane) {
                    noise(s, s.address());
                }
            }
            PreparedRequest request = engine.prepare(ids, Map.of());
            assertEquals(192, engine.store(request, source));
            assertEquals(3, source.gathers);
            assertEquals(0, engine.store(request, source), "stored chunks are skipped");
            assertEquals(3, source.gathers);

            // Retrieve into a paged cache whose slots run backwards through its blocks.
            PagedKvCache paged = paged(arena, 16);
            long[] slots = new long[tokens];
            for (int t = 0; t < tokens; t++) {
                slots[t] = (long) (15 - t / BLOCK) * BLOCK + t % BLOCK;
            }
            boolean[] loaded = engine.retrieve(request, paged, slots);
            for (int t = 0; t < tokens; t++) {
                assertEquals(t < 192, loaded[t], "token " + t);
                for (int p = 0; p < 2 && t < 192; p++) {
                    for (int l = 0; l < LAYERS; l++) {
                        long row = (long) HIDDEN * Float.BYTES;
                        assertEquals(-1, MemorySegment.mismatch(source.planes[p][l], t * row, (t + 1) * row,
                                paged.layers().get(l), paged.offset(p, slots[t]), paged.offset(p, slots[t]) + row));
                    }
                }
            }

            // And back: what the paged cache stores, an external cache retrieves.
            int[] other = new Random(2).ints(tokens, 0, 30_000).toArray();
            noise(paged.layers().get(0), 5);
            PreparedRequest second = engine.prepare(other, Map.of());
            assertEquals(192, engine.store(second, paged, slots));
            RowsKv target = new RowsKv(arena, 512);
            loaded = engine.retrieve(second, target, "r-1");
            assertTrue(loaded[191] && !loaded[192]);
            long row = (long) HIDDEN * Float.BYTES;
            for (int t = 0; t < 192; t++) {
                assertEquals(-1, MemorySegment.mismatch(target.planes[0][0], t * row, (t + 1) * row,
                        paged.layers().get(0), paged.offset(0, slots[t]), paged.offset(0, slots[t]) + row));
            }
        }
    }

    @Test
    void aCacheThatDoesNotFitTheModelOrTheRequestIsRefused() {
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine()) {
            PreparedRequest request = engine.prepare(new int[300], Map.of());
            RowsKv small = new RowsKv(arena, 100);
            assertTrue(assertThrows(IllegalArgumentException.class, () -> engine.store(request, small))
                    .getMessage().contains("holds 100 positions"));
            assertThrows(IllegalArgumentException.class, () -> engine.retrieve(request, small, null));
            ExternalKvCache wrongHeads = new RowsKv(arena, 512) {
                @Override public int numKvHeads() { return 4; }
            };
            assertTrue(assertThrows(IllegalArgumentException.class, () -> engine.store(request, wrongHeads))
                    .getMessage().contains("does not match the model"));
            assertThrows(NullPointerException.class, () -> engine.store(request, (ExternalKvCache) null));
            try (LMCacheEngine other = engine()) {
                PreparedRequest foreign = other.prepare(new int[64], Map.of());
                assertThrows(IllegalArgumentException.class, () -> engine.store(foreign, new RowsKv(arena, 512)));
            }
        }
    }
}
