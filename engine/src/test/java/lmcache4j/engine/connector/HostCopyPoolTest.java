package lmcache4j.engine.connector;

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

import lmcache4j.allocator.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

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
            new HostCopyPool(1).gather(plan, source, expected);
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
            new HostCopyPool(1).scatter(back, object, reference);
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
                        new HostCopyPool(1).gather(plan, source, expected);
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
            new HostCopyPool(1).gather(plan, source, expected);
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
            new HostCopyPool(1).gather(plan, source, expected);
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
            new HostCopyPool(1).gather(plan, source, expected);
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

    @Test
    void badThreadCountsAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new HostCopyPool(0));
        assertTrue(e.getMessage().contains("copy threads must be from 1 to 1024, was 0"), e.getMessage());
        assertTrue(HostCopyPool.machineThreads() >= 1 && HostCopyPool.machineThreads() <= HostCopyPool.MAX_DEFAULT_THREADS);
        assertFalse(new HostCopyPool(1).threadsFor(1L << 30) > 1);
    }
}
