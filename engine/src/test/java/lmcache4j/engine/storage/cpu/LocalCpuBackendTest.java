package lmcache4j.engine.storage.cpu;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.TestChunks.keys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryWaitTimeoutException;
import lmcache4j.engine.storage.TestChunks;
import org.junit.jupiter.api.Test;

class LocalCpuBackendTest {
    private static void store(LocalCpuBackend cpu, int i) {
        MemoryObj obj = chunk(cpu, i, AllocationMode.EVICT).orElseThrow();
        cpu.batchedSubmitPut(List.of(key(i)), List.of(obj));
        obj.release(); // the caller's reference; the tier keeps its own
    }

    @Test
    void putKeepsItsOwnReferenceAndGetsHandOutOneMore() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            store(cpu, 1);
            MemoryObj got = cpu.getBlocking(key(1)).orElseThrow();
            assertEquals(2, got.refCount(), "the tier's reference plus the caller's");
            assertEquals(1, TestChunks.marker(got));
            got.release();
            assertTrue(cpu.getBlocking(key(2)).isEmpty());
            assertTrue(cpu.remove(key(1)));
            assertFalse(cpu.remove(key(1)));
            assertEquals(0, cpu.allocator().stats().liveObjects());
        }
    }

    @Test
    void evictionFollowsThePolicyAndTouchCacheMakesThePrefixMostRecent() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(3, "LRU", 1)) {
            for (int i = 0; i < 3; i++) {
                store(cpu, i);
            }
            assertEquals(3, cpu.batchedContains(keys(0, 3), true)); // a lookup pins 0, 1, 2
            cpu.batchedContains(keys(0, 3), false);
            for (int i = 0; i < 3; i++) {
                cpu.unpin(key(i));
            }
            cpu.touchCache(); // recency applied last chunk first: 0 ends up most recent
            store(cpu, 3);    // evicts the least recent: chunk 2
            assertFalse(cpu.contains(key(2), false));
            assertTrue(cpu.contains(key(0), false) && cpu.contains(key(1), false) && cpu.contains(key(3), false));
            assertEquals(1, cpu.evictions());
            cpu.memcheck();
        }
    }

    @Test
    void pinnedAndSharedObjectsAreNeverEvictedAndStoresDoNotWait() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "FIFO", 1)) {
            store(cpu, 0);
            store(cpu, 1);
            cpu.pin(key(0));
            MemoryObj shared = cpu.getBlocking(key(1)).orElseThrow();
            long start = System.nanoTime();
            assertTrue(chunk(cpu, 9, AllocationMode.EVICT).isEmpty(), "nothing evictable: a store gives up at once");
            assertTrue(System.nanoTime() - start < 1_000_000_000L);
            assertEquals(1, cpu.evictionFailures());
            assertTrue(cpu.contains(key(0), false) && cpu.contains(key(1), false));
            shared.release();
            cpu.unpin(key(0));
            MemoryObj fresh = chunk(cpu, 9, AllocationMode.EVICT).orElseThrow();
            assertFalse(cpu.contains(key(0), false), "FIFO evicts the oldest once it is evictable");
            fresh.release();
        }
    }

    @Test
    void aRetrieveWaitsForMemoryAndFailsClearlyAtTheDeadline() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(1, "LRU", 0.3)) {
            store(cpu, 0);
            cpu.pin(key(0));
            long start = System.nanoTime();
            MemoryWaitTimeoutException e = assertThrows(MemoryWaitTimeoutException.class,
                    () -> chunk(cpu, 1, AllocationMode.EVICT_AND_WAIT));
            long waited = System.nanoTime() - start;
            assertTrue(waited >= 250_000_000L && waited < 5_000_000_000L, "waited " + waited + " ns");
            assertTrue(e.getMessage().contains("blocking_timeout_secs"), e.getMessage());
            MemoryObj kept = cpu.getBlocking(key(0)).orElseThrow(() -> new AssertionError("the pinned chunk was evicted"));
            assertEquals(0, TestChunks.marker(kept), "the pinned chunk survived the wait with its bytes");
            kept.release();
            assertEquals(0, cpu.evictions());
            assertEquals(1, cpu.allocator().stats().liveObjects(), "the failed wait holds no memory");
            cpu.unpin(key(0));
        }
    }

    @Test
    void aWaitingRetrieveProceedsOnlyOnceThePinnedChunkIsUnpinned() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(1, "LRU", 10)) {
            store(cpu, 0);
            cpu.pin(key(0));
            AtomicBoolean unpinned = new AtomicBoolean();
            CompletableFuture<Integer> pinnedMarker = new CompletableFuture<>();
            Thread releaser = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(200);
                    // The retrieve is waiting by now: the pinned chunk must still be there, intact.
                    MemoryObj pinned = cpu.getBlocking(key(0)).orElseThrow(() -> new AssertionError("the pinned chunk was evicted"));
                    pinnedMarker.complete(TestChunks.marker(pinned));
                    pinned.release();
                } catch (Throwable t) {
                    pinnedMarker.completeExceptionally(t);
                }
                unpinned.set(true);
                cpu.unpin(key(0));
            });
            MemoryObj obj = chunk(cpu, 1, AllocationMode.EVICT_AND_WAIT).orElseThrow();
            assertTrue(unpinned.get(), "the retrieve got memory before the only chunk was unpinned: it did not wait");
            releaser.join();
            assertEquals(0, pinnedMarker.get(), "the pinned chunk survived the wait with its bytes");
            assertFalse(cpu.contains(key(0), false), "once unpinned, it was evicted to make room");
            assertEquals(1, cpu.evictions());
            obj.release();
        }
    }

    @Test
    void withLocalCpuOffTheTierAllocatesButKeepsNothing() {
        var pool = new lmcache4j.allocator.pool.MixedMemoryAllocator("off", lmcache4j.allocator.tensor.TensorMemoryAllocator
                .strict("off/kv", 4 * TestChunks.CHUNK_BYTES, 4096));
        try (LocalCpuBackend cpu = new LocalCpuBackend(pool, "LRU", false, 1)) {
            MemoryObj obj = chunk(cpu, 1, AllocationMode.EVICT).orElseThrow();
            cpu.batchedSubmitPut(List.of(key(1)), List.of(obj));
            assertFalse(cpu.contains(key(1), false));
            obj.release();
        }
    }

    @Test
    void clearRemovesEvictableEntriesAndCountsTheirTokens() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            for (int i = 0; i < 3; i++) {
                store(cpu, i);
            }
            cpu.pin(key(1));
            assertEquals(2 * 256, cpu.clear());
            assertEquals(1, cpu.size());
            cpu.unpin(key(1));
        }
    }

    @Test
    void closingWithAnObjectStillHeldFailsAndNamesIt() {
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
        store(cpu, 0);
        MemoryObj held = cpu.getBlocking(key(0)).orElseThrow();
        IllegalStateException e = assertThrows(IllegalStateException.class, cpu::close);
        assertTrue(e.getMessage().contains("MemoryObj#" + held.id()), e.getMessage());
        held.release();
        cpu.allocator().close();
    }

    @Test
    void chunkBudgetRoundsChunksUpToTheAlignment() {
        assertEquals(10, LocalCpuBackend.chunkBudget(40960, 4000, 4096));
        assertEquals(0, LocalCpuBackend.chunkBudget(100, 4000, 4096));
    }
}
