package lmcache4j.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.util.List;

import lmcache4j.cuda.CudaRuntime;
import org.junit.jupiter.api.Test;

/** The allocator's public face: what a program outside lmcache4j can build, use, inspect and close. */
class HostMemoryAllocatorTest {
    private static final HostArenaOptions PLAIN = HostArenaOptions.DEFAULT.withHugePages(false);
    private static final TensorShape CHUNK = TensorShape.of(2, 2, 16, 64); // 8 KiB of bf16

    @Test
    void aTensorAllocatorOwnsItsMemoryPlacesFirstFitAndClosesClean() {
        try (HostMemoryAllocator kv = HostMemoryAllocator.tensor("kv", 1 << 20, PLAIN)) {
            AllocatorStats empty = kv.stats();
            assertEquals(1 << 20, empty.capacityBytes());
            assertEquals(0, empty.usedBytes());
            MemoryObj a = kv.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            MemoryObj b = kv.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            assertEquals(a.address() + 8192, b.address(), "first fit by lowest address, 4 KiB aligned");
            a.segment().set(ValueLayout.JAVA_LONG, 0, 42);
            assertEquals(42, a.segment().get(ValueLayout.JAVA_LONG, 0));
            assertEquals(2 * 8192, kv.stats().usedBytes());
            a.release();
            b.release();
            kv.memcheck();
            assertEquals(1, kv.stats().fragmentCount(), "freed neighbours coalesce");
        }
    }

    @Test
    void sizesRoundUpToTheChosenAlignment() {
        try (HostMemoryAllocator kv = HostMemoryAllocator.tensor("kv", 1 << 20, 1024, PLAIN)) {
            MemoryObj a = kv.allocate(TensorShape.of(2, 1, 1, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            MemoryObj b = kv.allocate(TensorShape.of(2, 1, 1, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            assertEquals(1024, kv.stats().usedBytes() / 2, "32 bytes take 1 KiB each");
            assertEquals(a.address() + 1024, b.address());
            a.release();
            b.release();
        }
        IllegalArgumentException tooLarge = assertThrows(IllegalArgumentException.class,
                () -> HostMemoryAllocator.tensor("kv", 1 << 20, 1 << 21, PLAIN));
        assertTrue(tooLarge.getMessage().contains("more than the page size"), tooLarge.getMessage());
    }

    @Test
    void aPagedAllocatorHandsOutWholePagesAndAnswersEmptyWhenFull() {
        try (HostMemoryAllocator pages = HostMemoryAllocator.paged("pages", 3, CHUNK, DType.BFLOAT16, PLAIN)) {
            assertEquals(3 * 8192, pages.stats().capacityBytes());
            List<MemoryObj> all = pages.allocateBatch(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD, 3).orElseThrow();
            assertTrue(pages.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).isEmpty(), "no fourth page");
            assertEquals(1, pages.stats().failedAllocations());
            pages.releaseAll(all);
            assertEquals(0, pages.stats().usedBytes());
        }
    }

    @Test
    void itSaysWhatTheMemoryBecame() {
        boolean cuda = CudaRuntime.load().isAvailable();
        try (HostMemoryAllocator kv = HostMemoryAllocator.tensor("kv", 1 << 20, HostArenaOptions.DEFAULT);
             HostMemoryAllocator unpinned = HostMemoryAllocator.tensor("plain", 1 << 20, PLAIN.withCudaPinned(false))) {
            assertEquals(cuda, kv.cudaPinned(), kv.memoryDescription());
            assertFalse(unpinned.cudaPinned());
            assertTrue(unpinned.memoryDescription().startsWith("mmap 1.0 MiB"), unpinned.memoryDescription());
        }
    }

    @Test
    void closingWithALiveObjectFailsNamingItAndKeepsTheMemory() {
        HostMemoryAllocator kv = HostMemoryAllocator.tensor("kv", 1 << 20, PLAIN);
        MemoryObj live = kv.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
        AllocatorLeakException leak = assertThrows(AllocatorLeakException.class, kv::close);
        assertTrue(leak.getMessage().contains("kv"), leak.getMessage());
        live.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1); // still mapped: nothing dangles
        live.release();
        kv.close();
        assertThrows(IllegalStateException.class, () -> kv.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD));
    }

    @Test
    void badArgumentsAreRefusedWithWhatWasWrong() {
        assertEquals("allocator 'kv': capacity must be positive, was 0 bytes", assertThrows(IllegalArgumentException.class,
                () -> HostMemoryAllocator.tensor("kv", 0, PLAIN)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> HostMemoryAllocator.tensor("kv", -1, PLAIN));
        assertEquals("alignment must be a power of two, was 3", assertThrows(IllegalArgumentException.class,
                () -> HostMemoryAllocator.tensor("kv", 1 << 20, 3, PLAIN)).getMessage());
        assertThrows(NullPointerException.class, () -> HostMemoryAllocator.tensor(null, 1 << 20, PLAIN));
        assertThrows(NullPointerException.class, () -> HostMemoryAllocator.tensor("kv", 1 << 20, null));
        assertEquals("page count must be positive, was 0", assertThrows(IllegalArgumentException.class,
                () -> HostMemoryAllocator.paged("p", 0, CHUNK, DType.BFLOAT16, PLAIN)).getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> HostMemoryAllocator.paged("p", Integer.MAX_VALUE,
                TensorShape.of(1 << 30, 1 << 30), DType.FLOAT32, PLAIN)).getMessage().contains("overflow"));
        IllegalArgumentException numa = assertThrows(IllegalArgumentException.class,
                () -> HostMemoryAllocator.tensor("kv", 1 << 20, PLAIN.withNumaNode(4095)));
        assertTrue(numa.getMessage().contains("NUMA node 4095 does not exist"), numa.getMessage());
    }

    @Test
    void memoryTheSystemRefusesIsAClearErrorNotACrash() {
        // Past the 47-bit user address space: mmap answers ENOMEM whatever the overcommit setting.
        HostMemoryUnavailableException refused = assertThrows(HostMemoryUnavailableException.class,
                () -> HostMemoryAllocator.tensor("huge", 1L << 50, PLAIN.withCudaPinned(false)));
        assertTrue(refused.getMessage().startsWith("allocator 'huge': cannot make 1125899906842624 bytes of host memory"),
                refused.getMessage());
        assertTrue(refused.getMessage().contains("ENOMEM"), refused.getMessage());
    }
}
