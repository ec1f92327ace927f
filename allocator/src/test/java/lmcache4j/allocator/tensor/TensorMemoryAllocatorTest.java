package lmcache4j.allocator.tensor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.AllocatorLeakException;
import lmcache4j.allocator.AllocatorStats;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;

class TensorMemoryAllocatorTest {
    private static final HostArenaOptions PLAIN = HostArenaOptions.DEFAULT.withHugePages(false);

    private static MemoryObj alloc(TensorMemoryAllocator a, int tokens) {
        return a.allocate(TensorShape.of(2, 1, tokens, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
    }

    @Test
    void sizesAreAlignedAndPlacementIsFirstFitByLowestAddress() {
        try (TensorMemoryAllocator a = TensorMemoryAllocator.strict("t", 64 << 10, 4096)) {
            MemoryObj x = alloc(a, 100);   // 3200 bytes -> 4096
            MemoryObj y = alloc(a, 300);   // 9600 bytes -> 12288
            MemoryObj z = alloc(a, 10);    // 320 bytes -> 4096
            assertEquals(0, x.address());
            assertEquals(4096, y.address());
            assertEquals(16384, z.address());
            assertEquals(12288, y.physicalSize());
            y.release();                    // hole [4096, 16384)
            MemoryObj w = alloc(a, 10);     // first fit: the hole, not the tail
            assertEquals(4096, w.address());
            x.release();
            z.release();
            w.release();
            AllocatorStats s = a.stats();
            assertEquals(1, s.fragmentCount(), "everything coalesced back into one block");
            assertEquals(64 << 10, s.largestFreeBlock());
            a.memcheck();
        }
    }

    @Test
    void batchesAreAllOrNothingAndReleaseAllCoalescesRuns() {
        try (TensorMemoryAllocator a = TensorMemoryAllocator.strict("t", 40 << 10, 4096)) {
            List<MemoryObj> batch = a.allocateBatch(TensorShape.of(2, 1, 100, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD, 8)
                    .orElseThrow();
            assertEquals(List.of(0L, 4096L, 8192L, 12288L, 16384L, 20480L, 24576L, 28672L),
                    batch.stream().map(MemoryObj::address).toList());
            long failedBefore = a.stats().failedAllocations();
            assertTrue(a.allocateBatch(TensorShape.of(2, 1, 100, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD, 3).isEmpty(),
                    "3 slots do not fit in the 8 KiB left");
            assertEquals(failedBefore + 1, a.stats().failedAllocations());
            assertEquals(8 << 10, a.stats().freeBytes(), "a failed batch changes nothing");
            a.releaseAll(batch);
            assertEquals(1, a.stats().fragmentCount());
            assertEquals(0, a.stats().liveObjects());
        }
    }

    @Test
    void closingWithLiveObjectsFailsAndListsThemWithTheirAllocationSites() {
        TensorMemoryAllocator a = TensorMemoryAllocator.strict("leaky", 64 << 10, 4096);
        MemoryObj kept = alloc(a, 10);
        AllocatorLeakException e = assertThrows(AllocatorLeakException.class, a::close);
        assertEquals(1, e.liveObjects());
        assertTrue(e.getMessage().contains("MemoryObj#" + kept.id()), e.getMessage());
        assertTrue(e.getMessage().contains("allocated here") && e.getMessage().contains("TensorMemoryAllocatorTest"),
                "paranoid leak detection (set by the build) records the allocation site:\n" + e.getMessage());
        kept.release();
        a.close();
        assertThrows(IllegalStateException.class, () -> alloc(a, 10));
    }

    @Test
    void anObjectDroppedWithoutReleaseIsReportedAndItsMemoryReclaimed() throws InterruptedException {
        try (TensorMemoryAllocator a = TensorMemoryAllocator.strict("gc", 64 << 10, 4096)) {
            dropOne(a);
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (a.stats().leaksReclaimed() == 0 && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
            }
            assertEquals(1, a.stats().leaksReclaimed(), "the leak detector reclaims unreachable unreleased objects");
            assertEquals(0, a.stats().liveObjects());
            a.memcheck();
        }
    }

    private static void dropOne(TensorMemoryAllocator a) {
        alloc(a, 10); // never released
    }

    @Test
    void grownRegionsAreNeverSpannedByOneObject() {
        try (TensorMemoryAllocator a = TensorMemoryAllocator.create("grow", HostArena.allocate(16 << 10, PLAIN), 4096)) {
            a.grow(HostArena.allocate(16 << 10, PLAIN));
            assertEquals(32 << 10, a.stats().capacityBytes());
            MemoryObj first = alloc(a, 300);  // 12 KiB at 0
            MemoryObj second = alloc(a, 300); // does not fit in [12K, 16K): goes to the second region
            assertEquals(0, first.address());
            assertEquals(16 << 10, second.address());
            first.release();
            second.release();
            assertEquals(2, a.stats().fragmentCount(), "the region boundary keeps two blocks apart");
            IllegalArgumentException tooBig = assertThrows(IllegalArgumentException.class, () -> alloc(a, 1000));
            assertTrue(tooBig.getMessage().contains("can ever hold in one piece"), tooBig.getMessage());
            a.memcheck();
        }
    }

    @Test
    void realMemoryIsWritableAndSlicesDoNotAlias() {
        try (TensorMemoryAllocator a = TensorMemoryAllocator.create("mem", HostArena.allocate(1 << 20, PLAIN), 4096)) {
            List<MemoryObj> objs = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                MemoryObj o = alloc(a, 1 + 37 * i);
                o.segment().fill((byte) i);
                objs.add(o);
            }
            for (int i = 0; i < 20; i++) {
                MemoryObj o = objs.get(i);
                for (long b = 0; b < o.byteSize(); b += 97) {
                    assertEquals((byte) i, o.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, b));
                }
            }
            a.releaseAll(objs);
        }
    }

    @Test
    void badArgumentsAreClearErrors() {
        try (TensorMemoryAllocator a = TensorMemoryAllocator.strict("bad", 64 << 10, 4096)) {
            assertThrows(IllegalArgumentException.class, () -> a.allocate(TensorShape.of(2, 1, 0, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD));
            assertThrows(IllegalArgumentException.class, () -> a.allocate(TensorShape.of(3, 1, 10, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD));
            assertThrows(IllegalArgumentException.class, () -> a.allocateBatch(TensorShape.of(2, 1, 10, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD, 0));
            assertThrows(NullPointerException.class, () -> a.allocate(null, DType.BFLOAT16, MemoryFormat.KV_2LTD));
        }
        assertThrows(IllegalArgumentException.class, () -> TensorMemoryAllocator.strict("x", 1 << 20, 3000));
        assertThrows(IllegalArgumentException.class, () -> TensorMemoryAllocator.strict("x", 0, 4096));
    }
}
