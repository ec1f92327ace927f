package lmcache4j.engine.storage;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.TestChunks.keys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import org.junit.jupiter.api.Test;

class StorageManagerTest {
    private static List<MemoryObj> chunks(LocalCpuBackend cpu, int from, int to) {
        List<MemoryObj> objs = new ArrayList<>();
        for (int i = from; i < to; i++) {
            objs.add(chunk(cpu, i, AllocationMode.EVICT).orElseThrow());
        }
        return objs;
    }

    @Test
    void putFansOutToEveryTierAndDropsTheCallersReferenceOnce() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        SecondaryTier lower = new SecondaryTier("LowerTier", null);
        try (StorageManager storage = new StorageManager(cpu, List.of(lower))) {
            List<MemoryObj> objs = chunks(cpu, 0, 3);
            storage.batchedPut(keys(0, 3), objs, Optional.empty());
            for (MemoryObj o : objs) {
                assertEquals(2, o.refCount(), "one reference per tier, the caller's dropped");
            }
            assertEquals(List.of("LocalCPUBackend", "LowerTier"), storage.tierNames());
        }
    }

    @Test
    void containedLocallyAsksEachLocalTierOnceForWhatTheTiersAboveLack() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        SecondaryTier lower = new SecondaryTier("LowerTier", null);
        try (StorageManager storage = new StorageManager(cpu, List.of(lower))) {
            List<MemoryObj> inCpu = chunks(cpu, 0, 2);
            storage.batchedPut(keys(0, 2), inCpu, Optional.of("LocalCPUBackend"));
            List<MemoryObj> below = chunks(cpu, 3, 4);
            storage.batchedPut(keys(3, 4), below, Optional.of("LowerTier"));
            long before = cpu.lock().acquisitions();
            boolean[] held = storage.containedLocally(keys(0, 5));
            assertEquals(1, cpu.lock().acquisitions() - before, "the CPU tier answered all five under one acquisition");
            assertEquals("[true, true, false, true, false]", java.util.Arrays.toString(held));
            assertEquals(0, storage.containedLocally(List.of()).length);
        }
    }

    @Test
    void tieredPrefixLookupAsksEachTierForTheRemainderAndGetsWriteBack() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        SecondaryTier lower = new SecondaryTier("LowerTier", null);
        try (StorageManager storage = new StorageManager(cpu, List.of(lower))) {
            storage.batchedPut(keys(0, 4), chunks(cpu, 0, 4), Optional.empty());
            cpu.remove(key(2));
            cpu.remove(key(3));
            TieredPrefix prefix = storage.batchedContains(keys(0, 6), true);
            assertEquals(4, prefix.hits());
            assertEquals(List.of(key(0), key(1)), prefix.blockMapping().get("LocalCPUBackend"));
            assertEquals(List.of(key(2), key(3)), prefix.blockMapping().get("LowerTier"));
            storage.unpin(prefix);
            assertEquals(0, cpu.allocator().stats().pinnedObjects());
            List<MemoryObj> got = storage.batchedGet(keys(0, 6));
            assertEquals(4, got.size(), "the prefix stops at the first missing chunk");
            for (int i = 0; i < 4; i++) {
                assertEquals(i, TestChunks.marker(got.get(i)));
            }
            assertTrue(cpu.contains(key(3), false), "a hit in a lower tier is written back into the CPU tier");
            got.forEach(MemoryObj::release);
        }
    }

    @Test
    void aBypassedTierIsSkippedAndTheCpuTierCannotBeBypassed() {
        LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1);
        SecondaryTier lower = new SecondaryTier("LowerTier", null);
        try (StorageManager storage = new StorageManager(cpu, List.of(lower))) {
            storage.setBypass("LowerTier", true);
            storage.batchedPut(keys(0, 1), chunks(cpu, 0, 1), Optional.empty());
            assertTrue(lower.keys().isEmpty());
            assertThrows(IllegalArgumentException.class, () -> storage.setBypass("LocalCPUBackend", true));
            storage.setBypass("LowerTier", false);
            assertEquals(Optional.of("LocalCPUBackend"), storage.contains(key(0), false));
        }
    }

    @Test
    void copiesForATierWithItsOwnAllocatorStayPairedWithTheirKeys() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        LocalCpuBackend device = TestChunks.cpuTier(8, "LRU", 1);
        SecondaryTier deviceTier = new SecondaryTier("DeviceTier", device);
        try (StorageManager storage = new StorageManager(cpu, List.of(deviceTier))) {
            // The device tier already holds chunk 1: LMCache would pair key 1 with chunk 2's copy.
            MemoryObj existing = chunk(device, 1, AllocationMode.EVICT).orElseThrow();
            deviceTier.batchedSubmitPut(List.of(key(1)), List.of(existing));
            existing.release();
            storage.batchedPut(keys(0, 3), chunks(cpu, 0, 3), Optional.empty());
            for (int i = 0; i < 3; i++) {
                CacheKey k = key(i);
                assertEquals(i, TestChunks.marker(deviceTier.peek(k)), "key " + i + " holds chunk " + i);
            }
            assertEquals(3, device.allocator().stats().liveObjects(), "copies come from the tier's own allocator");
        } finally {
            device.close();
        }
    }

    @Test
    void removeAndClearReachEveryTier() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        SecondaryTier lower = new SecondaryTier("LowerTier", null);
        try (StorageManager storage = new StorageManager(cpu, List.of(lower))) {
            storage.batchedPut(keys(0, 3), chunks(cpu, 0, 3), Optional.empty());
            assertEquals(2, storage.remove(key(0)));
            assertEquals(0, storage.clear(), "chunks the lower tier also holds are shared: not evictable");
            lower.remove(key(1));
            lower.remove(key(2));
            assertEquals(2 * 256, storage.clear(), "the CPU tier clears its 2 now evictable chunks");
            assertFalse(storage.contains(key(1), false).isPresent());
        }
    }
}
