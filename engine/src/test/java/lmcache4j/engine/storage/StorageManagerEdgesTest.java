package lmcache4j.engine.storage;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.TestChunks.keys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import org.junit.jupiter.api.Test;

/**
 * The manager at its edges: bypasses, listeners, a failing tier, a device tier that runs out of
 * room, the reference each tier takes and gives back, and closing in order.
 */
class StorageManagerEdgesTest {
    /** A tier whose puts and close fail: the broken remote store the others must survive. */
    private static final class BrokenTier implements StorageBackend {
        int closeCalls;

        @Override
        public String name() {
            return "BrokenTier";
        }

        @Override
        public boolean contains(CacheKey key, boolean pin) {
            return false;
        }

        @Override
        public void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
            throw new IllegalStateException("store unreachable");
        }

        @Override
        public Optional<MemoryObj> getBlocking(CacheKey key) {
            return Optional.empty();
        }

        @Override
        public boolean unpin(CacheKey key) {
            return false;
        }

        @Override
        public boolean remove(CacheKey key) {
            return false;
        }

        @Override
        public void touchCache() {
        }

        @Override
        public void close() {
            closeCalls++;
            throw new IllegalStateException("close failed: " + name());
        }
    }

    /** Every admit and eviction as "+tier:marker" or "-tier:marker", the marker the key's index. */
    private static final class Recorder implements ResidencyListener {
        final List<String> events = new ArrayList<>();

        @Override
        public synchronized void admitted(String tier, CacheKey key) {
            events.add("+" + tier + ":" + index(key));
        }

        @Override
        public synchronized void evicted(String tier, CacheKey key) {
            events.add("-" + tier + ":" + index(key));
        }

        private static int index(CacheKey key) {
            for (int i = 0; i < 16; i++) {
                if (key(i).equals(key)) {
                    return i;
                }
            }
            return -1;
        }
    }

    private static List<MemoryObj> chunks(LocalCpuBackend cpu, int from, int to) {
        List<MemoryObj> objs = new ArrayList<>();
        for (int i = from; i < to; i++) {
            objs.add(chunk(cpu, i, AllocationMode.EVICT).orElseThrow());
        }
        return objs;
    }

    @Test
    void twoTiersOfOneNameAreRefusedNamingIt() {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(1, "LRU", 1)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new StorageManager(cpu,
                    List.of(new SecondaryTier("Lower", null), new SecondaryTier("Lower", null))));
            assertEquals("two tiers are named Lower", e.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> new StorageManager(cpu, List.of(new SecondaryTier("LocalCPUBackend", null))));
        }
    }

    @Test
    void bypassesAreKeptPerTierAndAnUnknownTierIsRefusedWithTheTiersNamed() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        SecondaryTier a = new SecondaryTier("A", null);
        SecondaryTier b = new SecondaryTier("B", null);
        try (StorageManager storage = new StorageManager(cpu, List.of(a, b))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> storage.setBypass("C", true));
            assertEquals("no bypassable tier named C; tiers: [LocalCPUBackend, A, B]", e.getMessage());
            storage.setBypass("A", true);
            storage.setBypass("B", true);
            storage.setBypass("A", false);
            storage.batchedPut(keys(0, 1), chunks(cpu, 0, 1), Optional.empty());
            assertEquals(List.of(key(0)), a.keys());
            assertEquals(List.of(), b.keys(), "B stays bypassed when A comes back");
            cpu.remove(key(0));
            assertEquals(Optional.of("A"), storage.contains(key(0), false));
            storage.setBypass("A", true);
            assertEquals(Optional.empty(), storage.contains(key(0), false), "a bypassed tier is not asked");
            assertEquals(0, storage.batchedContains(keys(0, 1), false).hits());
            assertTrue(storage.get(key(0)).isEmpty());
            assertEquals(Optional.of(a), storage.tier("A"));
            assertEquals(Optional.empty(), storage.tier("C"));
            assertSame(cpu, storage.cpu());
        }
    }

    @Test
    void everyListenerHearsEveryTierFromWhenItWasAdded() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        try (StorageManager storage = new StorageManager(cpu, List.of(new SecondaryTier("Lower", null)))) {
            Recorder first = new Recorder();
            Recorder second = new Recorder();
            storage.setResidencyListener(first);
            storage.batchedPut(keys(0, 1), chunks(cpu, 0, 1), Optional.empty());
            storage.setResidencyListener(second);
            storage.batchedPut(keys(1, 2), chunks(cpu, 1, 2), Optional.empty());
            storage.remove(key(0));
            assertEquals(List.of("+LocalCPUBackend:0", "+LocalCPUBackend:1", "-LocalCPUBackend:0"), first.events);
            assertEquals(List.of("+LocalCPUBackend:1", "-LocalCPUBackend:0"), second.events);
            assertEquals(Map.of("LocalCPUBackend", List.of(key(1))), storage.residentKeys(),
                    "only the tiers that can list their keys answer");
        }
    }

    @Test
    void aFailingTierLosesNoOtherTiersCopyAndEveryCallersReferenceIsDroppedOnce() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        SecondaryTier lower = new SecondaryTier("Lower", null);
        BrokenTier broken = new BrokenTier();
        StorageManager storage = new StorageManager(cpu, List.of(broken, lower));
        List<MemoryObj> objs = chunks(cpu, 0, 2);
        storage.batchedPut(keys(0, 2), objs, Optional.empty());
        assertEquals(List.of(key(0), key(1)), lower.keys(), "the tier after the broken one has its copies");
        objs.forEach(o -> assertEquals(2, o.refCount(), "the CPU tier's and the lower tier's"));
        IllegalArgumentException mismatch = assertThrows(IllegalArgumentException.class,
                () -> storage.batchedPut(keys(0, 2), List.of(), Optional.empty()));
        assertEquals("2 keys but 0 objects", mismatch.getMessage());
        IllegalStateException e = assertThrows(IllegalStateException.class, storage::close);
        assertEquals("close failed: BrokenTier", e.getMessage());
        assertEquals(1, broken.closeCalls);
        assertEquals(List.of(), lower.keys(), "the lower tier was closed too");
        assertEquals(0, cpu.size(), "and the CPU tier after them, its allocator finding nothing held");
    }

    @Test
    void onlyTierStoresInThatTierAloneAndAGetFromBelowIsWrittenBackOnce() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        SecondaryTier lower = new SecondaryTier("Lower", null);
        try (StorageManager storage = new StorageManager(cpu, List.of(lower))) {
            List<MemoryObj> objs = chunks(cpu, 0, 2);
            storage.batchedPut(keys(0, 2), objs, Optional.of("Lower"));
            assertEquals(0, cpu.size());
            objs.forEach(o -> assertEquals(1, o.refCount(), "the lower tier's reference only"));
            MemoryObj got = storage.get(key(0)).orElseThrow();
            assertEquals(3, got.refCount(), "the lower tier's, the CPU tier's write-back and the caller's");
            assertTrue(cpu.contains(key(0), false));
            got.release();
            long before = cpu.lock().acquisitions();
            MemoryObj again = storage.get(key(0)).orElseThrow();
            assertEquals(1, cpu.lock().acquisitions() - before, "a CPU hit is not written back into the CPU tier");
            assertEquals(3, again.refCount());
            again.release();
            assertTrue(storage.get(key(5)).isEmpty());
            assertEquals(Optional.of("Lower"), storage.contains(key(1), true));
            assertEquals(1, lower.peek(key(1)).pinCount(), "the lower tier that answered pinned it");
            lower.unpin(key(1));
        }
    }

    @Test
    void aDeviceTierThatRunsOutOfRoomKeepsWhatItCopiedAndLeaksNothing() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        LocalCpuBackend device = TestChunks.cpuTier(2, "LRU", 1);
        SecondaryTier deviceTier = new SecondaryTier("DeviceTier", device);
        try (StorageManager storage = new StorageManager(cpu, List.of(deviceTier))) {
            storage.batchedPut(keys(0, 4), chunks(cpu, 0, 4), Optional.empty());
            assertEquals(List.of(key(0), key(1)), deviceTier.keys(), "two copies fit; the third allocation ended the put");
            assertEquals(0, TestChunks.marker(deviceTier.peek(key(0))));
            assertEquals(1, TestChunks.marker(deviceTier.peek(key(1))));
            assertEquals(1, deviceTier.peek(key(0)).refCount(), "the copy's only reference is the tier's");
            assertEquals(2, device.allocator().stats().liveObjects());
            // A tier that holds the key already gets no copy, and the CPU tier still gets the put.
            storage.batchedPut(keys(0, 1), chunks(cpu, 9, 10), Optional.empty());
            assertEquals(0, TestChunks.marker(deviceTier.peek(key(0))));
            assertEquals(2, device.allocator().stats().liveObjects());
        } finally {
            device.close();
        }
    }

    @Test
    void aLookupAsksOnlyTheTiersItNeedsAndMapsOnlyTiersThatHit() {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
        SecondaryTier middle = new SecondaryTier("Middle", null);
        SecondaryTier remote = new SecondaryTier("Remote", null).asRemote();
        try (StorageManager storage = new StorageManager(cpu, List.of(middle, remote))) {
            storage.batchedPut(keys(0, 3), chunks(cpu, 0, 3), Optional.of("LocalCPUBackend"));
            storage.batchedPut(keys(3, 4), chunks(cpu, 3, 4), Optional.of("Remote"));
            TieredPrefix prefix = storage.batchedContains(keys(0, 5), false);
            assertEquals(4, prefix.hits());
            assertEquals(List.of("LocalCPUBackend", "Remote"), List.copyOf(prefix.blockMapping().keySet()),
                    "the middle tier answered nothing and is not in the mapping");
            assertEquals("[true, true, true, false, false]", Arrays.toString(storage.containedLocally(keys(0, 5))),
                    "the remote tier's key is not local");
            assertEquals(1, middle.containsEachCalls());
            assertEquals(0, remote.containsEachCalls(), "a remote tier is never asked");
            storage.containedLocally(keys(0, 3));
            assertEquals(1, middle.containsEachCalls(), "all held by the CPU tier: no lower tier is asked");
        }
    }

    @Test
    void touchCacheMetricsAndAllocationGoThroughToTheCpuTier() {
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
        try (StorageManager storage = new StorageManager(cpu, List.of(new SecondaryTier("Lower", null)))) {
            assertEquals(2 * TestChunks.CHUNK_BYTES, storage.memoryCapacityBytes());
            storage.batchedPut(keys(0, 2), chunks(cpu, 0, 2), Optional.of("LocalCPUBackend"));
            storage.batchedContains(keys(0, 1), true);
            storage.unpin(new TieredPrefix(1, Map.of("LocalCPUBackend", List.of(key(0)))));
            storage.touchCache(); // 0 becomes the most recent
            MemoryObj fresh = storage.allocateForStore(TestChunks.CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            assertFalse(cpu.contains(key(1), false), "the touch made 1 the least recent: it was evicted");
            assertTrue(cpu.contains(key(0), false));
            fresh.release();
            List<MemoryObj> batch = storage.allocateBatch(TestChunks.CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD, 2,
                    AllocationMode.EVICT).orElseThrow();
            assertEquals(0, cpu.size());
            batch.forEach(MemoryObj::release);
            EngineMetrics metrics = new EngineMetrics("m", 0);
            storage.publishMetrics(metrics);
            assertEquals(2, metrics.snapshot().localCpuEvictions());
            storage.memcheck();
        }
    }

    @Test
    void aPrefetchAfterCloseIsAnsweredEmptyAtOnce() throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
        StorageManager storage = new StorageManager(cpu, List.of());
        storage.close();
        PrefetchedPrefix late = storage.prefetch(keys(0, 2)).get(5, TimeUnit.SECONDS);
        assertEquals(0, late.chunks());
        assertEquals(0, storage.prefetchesInFlight());
    }
}
