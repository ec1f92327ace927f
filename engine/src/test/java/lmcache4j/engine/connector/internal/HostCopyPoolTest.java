package lmcache4j.engine.connector.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import lmcache4j.allocator.DType;
import lmcache4j.cuda.cpu.StreamingCopy;
import lmcache4j.engine.connector.HostCopyRoutine;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;

/**
 * The copy pool: a plan split across threads moves exactly the bytes the single-threaded copy
 * moves, for many thread counts; the caller does the work itself when helpers do not run; small
 * plans start no thread; close stops every helper.
 */
class HostCopyPoolTest {
    private static final int LAYERS = 4;
    private static final int HEADS = 8;
    private static final int HEAD = 64; // 1 KiB per token vector in fp16
    private static final int BLOCK = 16; // 16 KiB runs
    private static final int BLOCKS = 128;

    /** A paged cache of random content in a shared arena, so helper threads may read it. */
    private static PagedKvCache cache(Arena arena, long seed) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, HEADS, HEAD, DType.FLOAT16);
        Random random = new Random(seed);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            MemorySegment s = arena.allocate(bytes, 64);
            for (long i = 0; i < bytes; i += 8) {
                s.set(ValueLayout.JAVA_LONG, i, random.nextLong());
            }
            layers.add(s);
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, HEADS, HEAD, DType.FLOAT16);
    }

    /** Slots of {@code tokens} tokens over a shuffled block table: scattered 16 KiB runs. */
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

    private static CopyPlan plan(PagedKvCache kv, long[] slots, int tokens) {
        CopyPlan plan = new CopyPlan();
        CopyPlanner.planChunk(kv, slots, 0, tokens, CopyPlanner.Unmapped.REJECT, plan);
        return plan;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 7, 8, 16, 33})
    void splitCopiesMoveExactlyWhatOneThreadMoves(int threads) {
        int tokens = 1024; // 2 planes × 4 layers × 1024 tokens × 1 KiB = 8 MiB in 512 runs
        try (Arena arena = Arena.ofShared(); HostCopyPool pool = new HostCopyPool(threads)) {
            PagedKvCache source = cache(arena, threads);
            long[] slots = slots(tokens, 17 * threads);
            CopyPlan plan = plan(source, slots, tokens);
            MemorySegment expected = arena.allocate(plan.totalBytes(), 64);
            new HostCopyPool(1, false).gather(plan, source, expected);
            MemorySegment object = arena.allocate(plan.totalBytes(), 64);
            for (int round = 0; round < 5; round++) { // helpers join some rounds and not others
                object.fill((byte) round);
                pool.gather(plan, source, object);
                assertEquals(-1, expected.mismatch(object), threads + " threads, round " + round);
            }
            // Scatter into another cache at another block table: the same bytes land where one thread puts them.
            PagedKvCache target = cache(arena, 1000 + threads);
            PagedKvCache reference = cache(arena, 1000 + threads);
            long[] targetSlots = slots(tokens, 99 * threads);
            CopyPlan back = plan(target, targetSlots, tokens);
            pool.scatter(back, object, target);
            new HostCopyPool(1, false).scatter(back, object, reference);
            for (int l = 0; l < LAYERS; l++) {
                assertEquals(-1, reference.layers().get(l).mismatch(target.layers().get(l)), "layer " + l);
            }
            assertTrue(pool.startedHelpers() <= threads - 1);
        }
    }

    @Test
    void manyCallersAtOnceShareTheHelpersAndEachGetsItsOwnBytes() throws Exception {
        int tokens = 1024;
        try (Arena arena = Arena.ofShared(); HostCopyPool pool = new HostCopyPool(3)) {
            PagedKvCache source = cache(arena, 5);
            ExecutorService callers = Executors.newFixedThreadPool(6);
            try {
                List<Future<Long>> results = new ArrayList<>();
                for (int c = 0; c < 6; c++) {
                    long seed = c;
                    results.add(callers.submit(() -> {
                        long[] slots = slots(tokens, seed);
                        CopyPlan plan = plan(source, slots, tokens);
                        MemorySegment expected = arena.allocate(plan.totalBytes(), 64);
                        new HostCopyPool(1, false).gather(plan, source, expected);
                        MemorySegment object = arena.allocate(plan.totalBytes(), 64);
                        for (int round = 0; round < 10; round++) {
                            object.fill((byte) 0);
                            pool.gather(plan, source, object);
                            if (expected.mismatch(object) != -1) {
                                return seed;
                            }
                        }
                        return -1L;
                    }));
                }
                for (Future<Long> r : results) {
                    assertEquals(-1L, r.get(), "a caller got bytes that are not its plan's");
                }
            } finally {
                callers.shutdown();
            }
        }
    }

    @Test
    @Timeout(60) // a caller that waited for a helper that is not running would hang here
    void theCallerDoesEveryPieceWhenTheHelpersDoNotRun() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger made = new AtomicInteger();
        // Helpers that exist (and count as idle) but do not run until released: the plan must not wait for them.
        ThreadFactory heldBack = r -> {
            made.incrementAndGet();
            return Thread.ofPlatform().daemon().unstarted(() -> {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    return;
                }
                r.run();
            });
        };
        int tokens = 1024;
        try (Arena arena = Arena.ofShared(); HostCopyPool pool = new HostCopyPool(4, heldBack)) {
            PagedKvCache source = cache(arena, 3);
            CopyPlan plan = plan(source, slots(tokens, 3), tokens);
            MemorySegment expected = arena.allocate(plan.totalBytes(), 64);
            new HostCopyPool(1, false).gather(plan, source, expected);
            MemorySegment object = arena.allocate(plan.totalBytes(), 64);
            pool.gather(plan, source, object); // returns although no helper has run
            assertEquals(-1, expected.mismatch(object));
            assertEquals(3, made.get(), "the plan asked for helpers");
            release.countDown(); // the helpers now find only finished plans
            object.fill((byte) 0);
            pool.gather(plan, source, object);
            assertEquals(-1, expected.mismatch(object));
        }
    }

    @Test
    void aSmallPlanStartsNoThreadAndThreadsForNeverExceedsTheWork() {
        try (Arena arena = Arena.ofShared(); HostCopyPool pool = new HostCopyPool(8)) {
            PagedKvCache source = cache(arena, 1);
            int tokens = 64; // 2 × 4 × 64 × 1 KiB = 512 KiB: less than one thread's share
            CopyPlan plan = plan(source, slots(tokens, 1), tokens);
            MemorySegment object = arena.allocate(plan.totalBytes(), 64);
            pool.gather(plan, source, object);
            assertEquals(0, pool.startedHelpers());
            assertEquals(1, pool.threadsFor(512 * 1024));
            assertEquals(3, pool.threadsFor(3 * HostCopyPool.MIN_BYTES_PER_THREAD + 5));
            assertEquals(8, pool.threadsFor(1L << 40));
        }
    }

    @Test
    void memoryOtherThreadsCannotReachIsCopiedByTheCaller() {
        int tokens = 1024;
        try (Arena confined = Arena.ofConfined(); HostCopyPool pool = new HostCopyPool(4)) {
            PagedKvCache source = cache(confined, 8);
            CopyPlan plan = plan(source, slots(tokens, 8), tokens);
            MemorySegment expected = confined.allocate(plan.totalBytes(), 64);
            new HostCopyPool(1, false).gather(plan, source, expected);
            MemorySegment object = confined.allocate(plan.totalBytes(), 64);
            pool.gather(plan, source, object);
            assertEquals(-1, expected.mismatch(object));
        }
    }

    @Test
    void closeStopsEveryHelperAndLaterPlansRunOnTheCaller() {
        int tokens = 1024;
        try (Arena arena = Arena.ofShared()) {
            HostCopyPool pool = new HostCopyPool(4);
            PagedKvCache source = cache(arena, 2);
            CopyPlan plan = plan(source, slots(tokens, 2), tokens);
            MemorySegment expected = arena.allocate(plan.totalBytes(), 64);
            new HostCopyPool(1, false).gather(plan, source, expected);
            MemorySegment object = arena.allocate(plan.totalBytes(), 64);
            pool.gather(plan, source, object);
            assertEquals(3, pool.startedHelpers(), "an 8 MiB plan on a 4-thread pool starts its 3 helpers");
            pool.close();
            assertEquals(0, pool.startedHelpers(), "close joins the helpers");
            pool.close(); // idempotent
            object.fill((byte) 0);
            pool.gather(plan, source, object);
            assertEquals(-1, expected.mismatch(object));
            assertEquals(0, pool.startedHelpers());
        }
    }

    /**
     * Streaming stores against cached ones over an awkward cache: 120-byte token vectors (runs are no
     * whole number of the routine's steps), layers and object at misaligned addresses, partial first
     * and last blocks. The routine takes what it can and MemorySegment.copy the rest, in plan order.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 4})
    void streamingAndCachedStoresMoveTheSameBytes(int threads) {
        try (Arena arena = Arena.ofShared(); HostCopyPool streaming = new HostCopyPool(threads, true)) {
            for (int variant = 0; variant < 3; variant++) {
                int heads = variant == 0 ? 8 : 3;
                int head = variant == 0 ? 64 : 20; // 1 KiB or 120 bytes a token vector in fp16
                long skew = variant == 2 ? 8 : 0; // variant 2: every layer and the object 8 bytes off alignment
                int blocks = 512;
                long layerBytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, blocks, BLOCK, heads, head, DType.FLOAT16);
                Random random = new Random(40 + variant);
                List<MemorySegment> layers = new ArrayList<>();
                for (int l = 0; l < LAYERS; l++) {
                    MemorySegment s = arena.allocate(layerBytes + skew, 64).asSlice(skew, layerBytes);
                    for (long b = 0; b + 8 <= layerBytes; b += 8) {
                        s.set(ValueLayout.JAVA_LONG_UNALIGNED, b, random.nextLong());
                    }
                    layers.add(s);
                }
                PagedKvCache kv = new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, blocks, BLOCK, heads, head, DType.FLOAT16);
                int start = 5;
                int tokens = 8000; // 2 × 4 × 8000 × 120 B = 7.3 MiB at the smallest: streamed
                List<Integer> order = new ArrayList<>();
                for (int b = 0; b < blocks; b++) {
                    order.add(b);
                }
                Collections.shuffle(order, random);
                long[] slots = new long[start + tokens];
                for (int t = 0; t < slots.length; t++) {
                    slots[t] = (long) order.get(t / BLOCK) * BLOCK + t % BLOCK;
                }
                CopyPlan plan = new CopyPlan();
                CopyPlanner.planChunk(kv, slots, start, start + tokens, CopyPlanner.Unmapped.REJECT, plan);
                assertTrue(plan.totalBytes() >= HostCopyPool.MIN_STREAMING_PLAN_BYTES);
                MemorySegment expected = arena.allocate(plan.totalBytes(), 64);
                new HostCopyPool(1, false).gather(plan, kv, expected);
                MemorySegment object = arena.allocate(plan.totalBytes() + skew, 64).asSlice(skew, plan.totalBytes());
                long copiedBefore = streaming.copiedBytes();
                long streamedBefore = streaming.streamedBytes();
                streaming.gather(plan, kv, object);
                assertEquals(-1, expected.mismatch(object), "gather, variant " + variant);
                long copied = streaming.copiedBytes() - copiedBefore;
                long streamed = streaming.streamedBytes() - streamedBefore;
                assertEquals(plan.totalBytes(), copied, "every byte counted once");
                // Streamed: exactly the runs the routine can take (variant 0: all; 1: none, the partial first
                // block leaves every later object offset 8 bytes off; 2: none, everything is misaligned).
                long expectedStreamed = 0;
                var routine = StreamingCopy.machine();
                for (int i = 0; i < plan.runs() && routine.isPresent(); i++) {
                    if (routine.get().canStream(layers.get(plan.layer(i)), plan.pagedOffset(i), object, plan.objectOffset(i),
                            plan.length(i))) {
                        expectedStreamed += plan.length(i);
                    }
                }
                assertEquals(expectedStreamed, streamed, "variant " + variant);
                if (variant == 0 && routine.isPresent()) {
                    assertEquals(copied, streamed, "1 KiB vectors, aligned: every run streams");
                }

                // Scatter it back over zeroed layers: the same bytes land in the same slots.
                for (MemorySegment layer : layers) {
                    layer.fill((byte) 0);
                }
                streaming.scatter(plan, object, kv);
                MemorySegment again = arena.allocate(plan.totalBytes(), 64);
                new HostCopyPool(1, false).gather(plan, kv, again);
                assertEquals(-1, expected.mismatch(again), "scatter, variant " + variant);
            }
        }
    }

    @Test
    void aFailedPlanLeavesNothingQueuedThatALaterPlanCouldWrite() {
        int tokens = 1024;
        try (Arena arena = Arena.ofShared(); HostCopyPool pool = new HostCopyPool(2, true)) {
            PagedKvCache source = cache(arena, 5);
            CopyPlan plan = plan(source, slots(tokens, 5), tokens);
            // An object one run short: the last run is out of bounds after earlier runs were queued.
            MemorySegment shortObject = arena.allocate(plan.totalBytes() - BLOCK * 1024, 64);
            assertThrows(IndexOutOfBoundsException.class, () -> pool.gather(plan, source, shortObject));
            shortObject.fill((byte) 0x33);
            MemorySegment expected = arena.allocate(plan.totalBytes(), 64);
            new HostCopyPool(1, false).gather(plan, source, expected);
            MemorySegment object = arena.allocate(plan.totalBytes(), 64);
            for (int round = 0; round < 4; round++) {
                object.fill((byte) 0);
                pool.gather(plan, source, object);
                assertEquals(-1, expected.mismatch(object));
            }
            for (long b = 0; b < shortObject.byteSize(); b++) {
                if (shortObject.get(ValueLayout.JAVA_BYTE, b) != 0x33) {
                    throw new AssertionError("the failed plan's object was written after it failed, at byte " + b);
                }
            }
        }
    }

    @Test
    void theStreamingModeIsReported() {
        String off = new HostCopyPool(1, false).streamingStores();
        assertEquals("off (turned off)", off);
        String on = new HostCopyPool(1, true).streamingStores();
        assertEquals(StreamingCopy.machine().map(c -> c.isa().label())
                .orElseGet(() -> "off (" + StreamingCopy.unavailabilityCause().orElseThrow().getMessage() + ")"), on);
        HostCopyPool memcpy = new HostCopyPool(1, HostCopyRoutine.LIBC_MEMCPY);
        assertEquals(HostCopyRoutine.LIBC_MEMCPY, memcpy.routine(), "glibc's memcpy links wherever the tests run");
        assertEquals("memcpy", memcpy.streamingStores());
    }

    /** glibc's memcpy, one downcall a run, on one thread and split: the bytes MemorySegment.copy moves, all counted as the routine's. */
    @ParameterizedTest
    @ValueSource(ints = {1, 3})
    void memcpyMovesExactlyWhatMemorySegmentCopyMoves(int threads) {
        int tokens = 1024; // 8 MiB in 512 runs: at least the 4 MiB from which the routine copies
        try (Arena arena = Arena.ofShared(); HostCopyPool pool = new HostCopyPool(threads, HostCopyRoutine.LIBC_MEMCPY)) {
            PagedKvCache source = cache(arena, 7 + threads);
            CopyPlan plan = plan(source, slots(tokens, 5 + threads), tokens);
            MemorySegment expected = arena.allocate(plan.totalBytes(), 64);
            new HostCopyPool(1, false).gather(plan, source, expected);
            MemorySegment object = arena.allocate(plan.totalBytes(), 64);
            pool.gather(plan, source, object);
            assertEquals(-1, expected.mismatch(object));
            PagedKvCache target = cache(arena, 70 + threads);
            PagedKvCache reference = cache(arena, 70 + threads);
            CopyPlan back = plan(target, slots(tokens, 50 + threads), tokens);
            pool.scatter(back, object, target);
            new HostCopyPool(1, false).scatter(back, object, reference);
            for (int l = 0; l < LAYERS; l++) {
                assertEquals(-1, reference.layers().get(l).mismatch(target.layers().get(l)), "layer " + l);
            }
            assertEquals(2 * plan.totalBytes(), pool.copiedBytes());
            assertEquals(pool.copiedBytes(), pool.streamedBytes());
        }
    }

    @Test
    void badThreadCountsAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new HostCopyPool(0));
        assertTrue(e.getMessage().contains("copy threads must be from 1 to 1024, was 0"), e.getMessage());
        assertTrue(HostCopyPool.machineThreads() >= 1 && HostCopyPool.machineThreads() <= HostCopyPool.MAX_DEFAULT_THREADS);
        assertFalse(new HostCopyPool(1).threadsFor(1L << 30) > 1);
    }
}
