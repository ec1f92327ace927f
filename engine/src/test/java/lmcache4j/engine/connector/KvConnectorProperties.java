package lmcache4j.engine.connector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.cuda.CudaException;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.engine.connector.internal.CopyPlan;
import lmcache4j.engine.connector.internal.CopyPlanner;
import lmcache4j.engine.connector.internal.CudaCopyExecutor;

/**
 * The copy plans against an element-by-element reference: for random block tables, layouts and
 * chunk ranges, a gather must put exactly the paged element {@code (plane, layer, slot, e)} at
 * object element {@code (plane, layer, t, e)}, and a scatter must write exactly those back, leaving
 * every other byte (and every token with slot -1) untouched.
 */
class KvConnectorProperties {
    private static final int LAYERS = 3;
    private static final int HEADS = 2;
    private static final int HEAD = 4;
    private static final int BLOCKS = 12;
    private static final int BLOCK = 4;

    private static PagedKvCache cache(Arena arena, PagedLayout layout, long seed) {
        int heads = layout == PagedLayout.MLA ? 1 : HEADS;
        long bytes = PagedKvCache.layerBytes(layout, BLOCKS, BLOCK, heads, HEAD, DType.FLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        Random random = new Random(seed);
        for (int l = 0; l < LAYERS; l++) {
            MemorySegment s = arena.allocate(bytes, 64);
            for (long i = 0; i < bytes; i += 2) {
                s.set(ValueLayout.JAVA_SHORT, i, (short) random.nextInt());
            }
            layers.add(s);
        }
        return new PagedKvCache(layers, layout, BLOCKS, BLOCK, heads, HEAD, DType.FLOAT16);
    }

    /** Slots of a request of {@code tokens} tokens over a random block table. */
    private static long[] slots(int tokens, long seed) {
        List<Integer> blocks = new ArrayList<>();
        for (int b = 0; b < BLOCKS; b++) {
            blocks.add(b);
        }
        Collections.shuffle(blocks, new Random(seed));
        long[] slots = new long[tokens];
        for (int t = 0; t < tokens; t++) {
            slots[t] = (long) blocks.get(t / BLOCK) * BLOCK + t % BLOCK;
        }
        return slots;
    }

    private static short paged(PagedKvCache kv, int plane, int layer, long slot, int e) {
        return kv.layers().get(layer).get(ValueLayout.JAVA_SHORT, kv.offset(plane, slot) + 2L * e);
    }

    @Property
    void gatherThenScatterMovesExactlyTheChunksElements(@ForAll @IntRange(min = 1, max = 40) int tokens,
                                                        @ForAll @IntRange(min = 0, max = 39) int startPick,
                                                        @ForAll long seed,
                                                        @ForAll PagedLayout layout) {
        int start = startPick % tokens;
        int end = start + 1 + (int) Math.floorMod(seed, tokens - start);
        try (Arena arena = Arena.ofConfined();
             TensorMemoryAllocator pool = TensorMemoryAllocator.strict("c", 1 << 20, 64);
             KvConnector connector = KvConnector.host()) {
            PagedKvCache source = cache(arena, layout, seed);
            long[] slots = slots(tokens, seed);
            MemoryObj obj = pool.allocate(KvConnector.chunkShape(source, end - start), DType.FLOAT16,
                    KvConnector.chunkFormat(source)).orElseThrow();
            long moved = connector.fromPaged(source, slots, start, end, obj);
            connector.finish();
            int planes = layout.kvPlanes();
            int hidden = source.hidden();
            assertEquals((long) planes * LAYERS * (end - start) * hidden * 2, moved);
            for (int p = 0; p < planes; p++) {
                for (int l = 0; l < LAYERS; l++) {
                    for (int t = start; t < end; t++) {
                        for (int e = 0; e < hidden; e++) {
                            long objIndex = (((long) p * LAYERS + l) * (end - start) + (t - start)) * hidden + e;
                            assertEquals(paged(source, p, l, slots[t], e), obj.segment().get(ValueLayout.JAVA_SHORT, 2 * objIndex));
                        }
                    }
                }
            }
            // Scatter into another cache with another block table; one token is left alone (-1).
            PagedKvCache target = cache(arena, layout, seed + 1);
            PagedKvCache before = cache(arena, layout, seed + 1);
            long[] targetSlots = slots(tokens, seed + 7);
            targetSlots[start] = -1;
            connector.toPaged(obj, target, targetSlots, start, end);
            for (int l = 0; l < LAYERS; l++) {
                MemorySegment expected = before.layers().get(l);
                for (int p = 0; p < planes; p++) {
                    for (int t = start + 1; t < end; t++) {
                        MemorySegment.copy(source.layers().get(l), source.offset(p, slots[t]), expected,
                                target.offset(p, targetSlots[t]), source.vectorBytes());
                    }
                }
                assertEquals(-1, expected.mismatch(target.layers().get(l)), "layer " + l + " differs from the reference");
            }
            obj.release();
        }
    }

    @Property
    void layerObjectsCarryOneLayerInTheirFormat(@ForAll @IntRange(min = 1, max = 20) int tokens, @ForAll long seed,
                                                @ForAll boolean twoTd) {
        MemoryFormat format = twoTd ? MemoryFormat.KV_2TD : MemoryFormat.KV_T2D;
        try (Arena arena = Arena.ofConfined();
             TensorMemoryAllocator pool = TensorMemoryAllocator.strict("c", 1 << 20, 64);
             KvConnector connector = KvConnector.host()) {
            PagedKvCache kv = cache(arena, PagedLayout.FLASH_ATTENTION, seed);
            long[] slots = slots(tokens, seed);
            int layer = (int) Math.floorMod(seed, LAYERS);
            MemoryObj obj = pool.allocate(KvConnector.layerShape(kv, tokens, format), DType.FLOAT16, format).orElseThrow();
            connector.fromPagedLayer(kv, slots, layer, 0, tokens, obj);
            int hidden = kv.hidden();
            for (int t = 0; t < tokens; t++) {
                for (int p = 0; p < 2; p++) {
                    long base = twoTd ? ((long) p * tokens + t) * hidden : ((long) t * 2 + p) * hidden;
                    for (int e = 0; e < hidden; e++) {
                        assertEquals(paged(kv, p, layer, slots[t], e), obj.segment().get(ValueLayout.JAVA_SHORT, 2 * (base + e)));
                    }
                }
            }
            assertEquals(format, obj.format());
            obj.release();
        }
    }

    @Property
    void aChunkPlanIsTheTokenByTokenPlan(@ForAll @IntRange(min = 1, max = 48) int tokens,
                                         @ForAll @IntRange(min = 0, max = 47) int startPick,
                                         @ForAll long seed, @ForAll PagedLayout layout, @ForAll boolean holes) {
        int start = startPick % tokens;
        try (Arena arena = Arena.ofConfined()) {
            PagedKvCache kv = cache(arena, layout, seed);
            long[] slots = slots(tokens, seed);
            Random random = new Random(seed);
            for (int t = 0; t < tokens && holes; t++) {
                if (random.nextInt(5) == 0) {
                    slots[t] = -1;
                }
            }
            CopyPlan plan = new CopyPlan();
            CopyPlanner.planChunk(kv, slots, start, tokens, CopyPlanner.Unmapped.SKIP, plan);
            CopyPlan reference = new CopyPlan(); // one vector at a time, merged by CopyPlan.add
            long vec = kv.vectorBytes();
            for (int p = 0; p < layout.kvPlanes(); p++) {
                for (int l = 0; l < LAYERS; l++) {
                    for (int t = start; t < tokens; t++) {
                        if (slots[t] >= 0) {
                            reference.add(l, kv.offset(p, slots[t]), (((long) p * LAYERS + l) * (tokens - start) + t - start) * vec, vec);
                        }
                    }
                }
            }
            assertEquals(reference.runs(), plan.runs(), plan + " vs " + reference);
            assertEquals(reference.totalBytes(), plan.totalBytes());
            for (int i = 0; i < plan.runs(); i++) {
                assertEquals(reference.layer(i), plan.layer(i), "run " + i);
                assertEquals(reference.pagedOffset(i), plan.pagedOffset(i), "run " + i);
                assertEquals(reference.objectOffset(i), plan.objectOffset(i), "run " + i);
                assertEquals(reference.length(i), plan.length(i), "run " + i);
            }
        }
    }

    @Test
    void contiguousSlotsBecomeOneRunPerBlockAndPlane() {
        try (Arena arena = Arena.ofConfined()) {
            PagedKvCache kv = cache(arena, PagedLayout.FLASH_ATTENTION, 1);
            long[] slots = new long[8];
            for (int t = 0; t < 8; t++) {
                slots[t] = 4 * BLOCK + t; // blocks 4 and 5, adjacent: one run per plane and layer
            }
            CopyPlan plan = new CopyPlan();
            CopyPlanner.planChunk(kv, slots, 0, 8, CopyPlanner.Unmapped.REJECT, plan);
            assertEquals(2 * LAYERS, plan.runs(), plan.toString());
            assertEquals(8 * kv.vectorBytes(), plan.length(0));
            PagedKvCache flashInfer = cache(arena, PagedLayout.FLASH_INFER, 1);
            CopyPlanner.planChunk(flashInfer, slots, 0, 8, CopyPlanner.Unmapped.REJECT, plan);
            assertEquals(2 * 2 * LAYERS, plan.runs(), "FlashInfer interleaves K and V per block: no merge across blocks");
        }
    }

    @Test
    void badInputIsRefusedBeforeAnyByteMoves() {
        try (Arena arena = Arena.ofConfined();
             TensorMemoryAllocator pool = TensorMemoryAllocator.strict("c", 1 << 20, 64);
             KvConnector connector = KvConnector.host()) {
            PagedKvCache kv = cache(arena, PagedLayout.FLASH_ATTENTION, 1);
            long[] slots = slots(8, 1);
            MemoryObj obj = pool.allocate(KvConnector.chunkShape(kv, 8), DType.FLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            MemoryObj wrongDtype = pool.allocate(KvConnector.chunkShape(kv, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            assertThrows(IllegalArgumentException.class, () -> connector.fromPaged(kv, slots, 0, 9, obj), "range beyond the mapping");
            assertThrows(IllegalArgumentException.class, () -> connector.fromPaged(kv, slots, 0, 4, obj), "shape for 8 tokens, range of 4");
            assertThrows(IllegalArgumentException.class, () -> connector.fromPaged(kv, slots, 0, 8, wrongDtype));
            long[] unmapped = slots.clone();
            unmapped[3] = -1;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> connector.fromPaged(kv, unmapped, 0, 8, obj));
            assertTrue(e.getMessage().contains("token 3"), e.getMessage());
            long[] outside = slots.clone();
            outside[2] = BLOCKS * BLOCK;
            assertThrows(IllegalArgumentException.class, () -> connector.toPaged(obj, kv, outside, 0, 8));
            assertThrows(IllegalArgumentException.class, () -> new PagedKvCache(List.of(arena.allocate(16)),
                    PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, HEADS, HEAD, DType.FLOAT16), "buffer too small");
            obj.release();
            wrongDtype.release();
        }
    }

    @Test
    void theCudaExecutorIsChosenOnlyWhereCudaIsAvailableAndItsErrorsAreDecoded() {
        CudaRuntime cuda = CudaRuntime.load();
        try (KvConnector connector = KvConnector.forRuntime(cuda)) {
            assertEquals(cuda.isAvailable() ? "cuda" : "host", connector.executorName());
        }
        if (!cuda.isAvailable() && cuda.isLoaded()) {
            CudaException e = assertThrows(CudaException.class, () -> new CudaCopyExecutor(cuda));
            assertEquals(35, e.code(), "no driver here: stream creation answers cudaErrorInsufficientDriver");
        }
    }
}
