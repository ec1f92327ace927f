package lmcache4j.allocator.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import org.junit.jupiter.api.Test;

class PoolTest {
    private static final HostArenaOptions PLAIN = HostArenaOptions.DEFAULT.withHugePages(false);
    private static final TensorShape CHUNK = TensorShape.of(2, 2, 256, 64); // 128 KiB in bf16

    @Test
    void theMixedPoolRoutesByFormat() {
        try (MixedMemoryAllocator mixed = new MixedMemoryAllocator("mixed",
                TensorMemoryAllocator.create("mixed/kv", HostArena.allocate(1 << 20, PLAIN), 4096))) {
            MemoryObj kv = mixed.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            MemoryObj bytes = mixed.allocate(TensorShape.of(1000), DType.UINT8, MemoryFormat.BINARY_BUFFER).orElseThrow();
            assertEquals("mixed/kv", kv.ownerName());
            assertEquals("mixed/buffers", bytes.ownerName());
            assertEquals(1000, bytes.segment().byteSize());
            assertEquals(1, mixed.bufferStats().liveObjects());
            assertThrows(IllegalArgumentException.class,
                    () -> mixed.allocate(TensorShape.of(10), DType.UINT8, MemoryFormat.BINARY));
            mixed.releaseAll(List.of(kv, bytes));
            assertEquals(0, mixed.stats().liveObjects());
            assertEquals(0, mixed.bufferStats().liveObjects());
        }
    }

    @Test
    void theLazyPoolStartsSmallAndGrowsToItsTargetInSteps() throws InterruptedException {
        AtomicInteger regions = new AtomicInteger();
        long target = 10L << 20;
        LazyGrowingAllocator lazy = new LazyGrowingAllocator("lazy", target, 4096, 0.2, 0.1, 0.5, bytes -> {
            regions.incrementAndGet();
            return HostArena.allocate(bytes, PLAIN);
        });
        try {
            assertEquals(2L << 20, lazy.stats().capacityBytes(), "starts at 20% of the target");
            List<MemoryObj> held = new ArrayList<>();
            for (int i = 0; i < 7; i++) { // 7 × 128 KiB = 0.875 MiB < 50% of 2 MiB: no growth yet
                held.add(lazy.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow());
            }
            assertEquals(1, regions.get());
            for (int i = 0; i < 2; i++) { // crosses 50%: growth starts in the background
                held.add(lazy.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow());
            }
            lazy.awaitGrowth();
            assertEquals(target, lazy.stats().capacityBytes());
            assertEquals(1 + 8, regions.get(), "2 MiB initial + 8 steps of 1 MiB");
            for (int i = 0; i < 60; i++) {
                held.add(lazy.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow());
            }
            lazy.memcheck();
            lazy.releaseAll(held);
        } finally {
            lazy.close();
        }
    }

    @Test
    void aRegionThatCannotBeMadeStopsGrowthButNotThePool() throws InterruptedException {
        AtomicInteger calls = new AtomicInteger();
        LazyGrowingAllocator lazy = new LazyGrowingAllocator("refused", 10L << 20, 4096, 0.2, 0.1, 0.5, bytes -> {
            if (calls.incrementAndGet() > 2) {
                throw new IllegalStateException("no more memory (test)");
            }
            return HostArena.allocate(bytes, PLAIN);
        });
        try {
            List<MemoryObj> held = new ArrayList<>();
            for (int i = 0; i < 9; i++) {
                held.add(lazy.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow());
            }
            lazy.awaitGrowth();
            assertEquals(3L << 20, lazy.stats().capacityBytes(), "the initial 2 MiB plus the one step that worked");
            assertTrue(lazy.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).map(held::add).isPresent());
            lazy.releaseAll(held);
        } finally {
            lazy.close();
        }
    }

    @Test
    void manyThreadsSharingOnePoolLeaveExactAccounting() throws Exception {
        try (MixedMemoryAllocator pool = new MixedMemoryAllocator("shared",
                TensorMemoryAllocator.create("shared/kv", HostArena.allocate(8 << 20, PLAIN), 4096))) {
            int threads = 6;
            List<Thread> workers = new ArrayList<>();
            List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
            for (int t = 0; t < threads; t++) {
                int seed = t;
                workers.add(Thread.ofPlatform().start(() -> {
                    java.util.Random random = new java.util.Random(seed);
                    List<MemoryObj> mine = new ArrayList<>();
                    try {
                        for (int i = 0; i < 3_000; i++) {
                            if (mine.size() < 8 && random.nextBoolean()) {
                                pool.allocate(CHUNK.withDim(2, 1 + random.nextInt(256)), DType.BFLOAT16, MemoryFormat.KV_2LTD)
                                        .ifPresent(o -> {
                                            o.pin();
                                            mine.add(o);
                                        });
                            } else if (!mine.isEmpty()) {
                                MemoryObj o = mine.remove(random.nextInt(mine.size()));
                                o.release();
                                o.unpin();
                            }
                        }
                        mine.forEach(o -> {
                            o.unpin();
                            o.release();
                        });
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            for (Thread w : workers) {
                w.join();
            }
            assertEquals(List.of(), failures);
            pool.memcheck();
            assertEquals(0, pool.stats().liveObjects());
            assertEquals(0, pool.stats().pinnedObjects());
            assertEquals(0, pool.stats().usedBytes());
            assertEquals(1, pool.stats().fragmentCount());
        }
    }
}
