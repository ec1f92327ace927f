package lmcache4j.engine.storage.cpu;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.TestChunks.keys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.pool.MixedMemoryAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.metrics.MetricsSnapshot;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.TestChunks;
import org.junit.jupiter.api.Test;

/** The CPU tier at its edges: a repeated put, a full pool in each allocation mode, a closed tier, bad settings. */
class LocalCpuBackendEdgesTest {
    private static MixedMemoryAllocator pool(int chunks) {
        return new MixedMemoryAllocator("edges", TensorMemoryAllocator.strict("edges/kv", chunks * TestChunks.CHUNK_BYTES, 4096));
    }

    private static void store(LocalCpuBackend cpu, int i) {
        MemoryObj obj = chunk(cpu, i, AllocationMode.EVICT).orElseThrow();
        cpu.submitPut(key(i), obj);
        obj.release();
    }

    @Test
    void aBlockingTimeoutThatIsNotPositiveIsRefusedByName() {
        for (double bad : new double[] {0, -1, Double.NaN}) {
            try (MixedMemoryAllocator p = pool(1)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> new LocalCpuBackend(p, "LRU", true, bad));
                assertTrue(e.getMessage().contains("blocking_timeout_secs"), e.getMessage());
            }
        }
    }

    @Test
    void aSecondPutOfAHeldKeyKeepsTheFirstObjectAndTakesNoReferenceToTheSecond() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            store(cpu, 1);
            MemoryObj other = chunk(cpu, 7, AllocationMode.EVICT).orElseThrow();
            cpu.submitPut(key(1), other);
            cpu.batchedSubmitPut(List.of(key(1)), List.of(other));
            assertEquals(1, other.refCount(), "the tier kept no reference to the object it did not store");
            MemoryObj got = cpu.getBlocking(key(1)).orElseThrow();
            assertEquals(1, TestChunks.marker(got), "the first object stays under the key");
            got.release();
            other.release();
            assertEquals(1, cpu.size());
            assertEquals(Optional.of(List.of(key(1))), cpu.residentKeys());
            cpu.memcheck();
        }
    }

    @Test
    void mismatchedListsAreRefusedBeforeAnythingIsStored() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            MemoryObj obj = chunk(cpu, 0, AllocationMode.EVICT).orElseThrow();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> cpu.batchedSubmitPut(keys(0, 2), List.of(obj)));
            assertEquals("2 keys but 1 objects", e.getMessage());
            assertEquals(0, cpu.size());
            obj.release();
        }
    }

    @Test
    void noEvictionModeFailsOnAFullPoolAndLeavesEvictableChunksAlone() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            store(cpu, 0);
            store(cpu, 1);
            assertTrue(chunk(cpu, 2, AllocationMode.NO_EVICTION).isEmpty());
            assertEquals(2, cpu.size());
            assertEquals(0, cpu.evictions());
            assertTrue(cpu.allocateBatch(TestChunks.CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD, 2,
                    AllocationMode.NO_EVICTION).isEmpty());
            List<MemoryObj> two = cpu.allocateBatch(TestChunks.CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD, 2,
                    AllocationMode.EVICT_AND_WAIT).orElseThrow();
            assertEquals(2, cpu.evictions(), "a batch of two evicts both chunks, without waiting");
            assertEquals(0, cpu.size());
            two.forEach(MemoryObj::release);
        }
    }

    @Test
    void unpinningAnUnpinnedChunkChangesNothing() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            store(cpu, 0);
            assertFalse(cpu.unpin(key(0)));
            assertFalse(cpu.unpin(key(5)));
            assertTrue(cpu.pin(key(0)));
            assertFalse(cpu.pin(key(5)));
            assertTrue(cpu.unpin(key(0)));
            assertFalse(cpu.unpin(key(0)), "its one pin is gone");
            assertEquals(0, cpu.allocator().stats().pinnedObjects());
            cpu.batchedUnpin(keys(0, 2));
            assertEquals(0, cpu.allocator().stats().pinnedObjects());
            cpu.memcheck();
            assertEquals(256, cpu.clear());
            assertFalse(cpu.lock().isLocked(), "memcheck and clear released the lock");
        }
    }

    @Test
    void aClosedTierRefusesPutsAndClosesOnce() {
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
        store(cpu, 0);
        MemoryObj loose = chunk(cpu, 1, AllocationMode.EVICT).orElseThrow();
        loose.release();
        cpu.close();
        assertEquals(0, cpu.size(), "closing dropped the tier's entries");
        assertFalse(cpu.lock().isLocked(), "close released the lock");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> cpu.submitPut(key(2), loose));
        assertTrue(e.getMessage().contains("LocalCPUBackend is closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> cpu.batchedSubmitPut(List.of(), List.of()));
        cpu.close(); // a second close is harmless
    }

    @Test
    void withLocalCpuOffNothingIsKeptSoNothingIsEvictedOrCountedAsAFailure() {
        try (LocalCpuBackend cpu = new LocalCpuBackend(pool(1), "LRU", false, 1)) {
            MemoryObj obj = chunk(cpu, 0, AllocationMode.EVICT).orElseThrow();
            cpu.submitPut(key(0), obj);
            assertFalse(cpu.contains(key(0), false));
            assertEquals(1, obj.refCount());
            assertTrue(chunk(cpu, 1, AllocationMode.EVICT).isEmpty(), "the pool is full and the tier holds nothing to evict");
            assertEquals(0, cpu.evictionFailures(), "a tier that keeps nothing has no eviction to fail");
            obj.release();
        }
    }

    @Test
    void itsGaugesReadTheLiveTier() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            EngineMetrics metrics = new EngineMetrics("m", 0);
            cpu.publishMetrics(metrics);
            store(cpu, 0);
            store(cpu, 1);
            cpu.pin(key(0));
            store(cpu, 2); // evicts 1: 0 is pinned
            MemoryObj held = chunk(cpu, 3, AllocationMode.EVICT).orElseThrow(); // evicts 2
            assertTrue(chunk(cpu, 4, AllocationMode.EVICT).isEmpty(), "0 pinned, 3 held: nothing to evict");
            MetricsSnapshot s = metrics.snapshot();
            assertEquals(1, s.hotCacheCount());
            assertEquals(2, s.localCpuEvictions());
            assertEquals(1, s.localCpuEvictionFailures());
            assertEquals(2, s.activeMemoryObjs());
            assertEquals(1, s.pinnedMemoryObjs());
            assertEquals(2 * TestChunks.CHUNK_BYTES, s.localCacheUsageBytes());
            assertTrue(s.tierReadings().get("lmcache4j:cpu_tier_lock_acquisitions") > 0);
            assertEquals(cpu.lock().contended(), s.tierReadings().get("lmcache4j:cpu_tier_lock_contended"));
            assertTrue(s.tierReadings().get("lmcache4j:cpu_tier_lock_hold_nanos") > 0);
            assertEquals(cpu.lock().waitNanos(), s.tierReadings().get("lmcache4j:cpu_tier_lock_wait_nanos"));
            held.release();
            assertEquals("LRU", cpu.policyName());
            assertEquals("LocalCPUBackend", cpu.name());
            cpu.unpin(key(0));
        }
    }

    @Test
    void chunkBudgetCountsAnExactlyAlignedChunkOnceAndRefusesNonPositiveSizes() {
        assertEquals(2, LocalCpuBackend.chunkBudget(8192, 4096, 4096));
        assertEquals(1, LocalCpuBackend.chunkBudget(8192, 4097, 4096));
        assertThrows(IllegalArgumentException.class, () -> LocalCpuBackend.chunkBudget(8192, 0, 4096));
        assertThrows(IllegalArgumentException.class, () -> LocalCpuBackend.chunkBudget(8192, 4096, 0));
    }
}
