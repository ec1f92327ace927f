package lmcache4j.allocator.paged;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import org.junit.jupiter.api.Test;

class PagedTensorMemoryAllocatorTest {
    private static final TensorShape PAGE = TensorShape.of(2, 4, 256, 64);

    @Test
    void aPartialChunkTakesAWholePageButSeesOnlyItsBytesAndPagesComeBackFifo() {
        long page = PAGE.byteSize(DType.BFLOAT16);
        try (PagedTensorMemoryAllocator a = PagedTensorMemoryAllocator.create("paged",
                HostArena.allocate(page * 3, HostArenaOptions.DEFAULT.withHugePages(false)), PAGE, DType.BFLOAT16)) {
            MemoryObj full = a.allocate(PAGE, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            MemoryObj partial = a.allocate(PAGE.withDim(2, 10), DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            assertEquals(page, partial.physicalSize());
            assertEquals(PAGE.withDim(2, 10).byteSize(DType.BFLOAT16), partial.segment().byteSize());
            assertEquals(10, partial.tokenCount());
            assertEquals(page, partial.address());
            full.release();
            MemoryObj third = a.allocate(PAGE, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            assertEquals(2 * page, third.address(), "free pages are reused first in, first out");
            MemoryObj reused = a.allocate(PAGE, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            assertEquals(0, reused.address());
            assertTrue(a.allocate(PAGE, DType.BFLOAT16, MemoryFormat.KV_2LTD).isEmpty());
            assertThrows(IllegalArgumentException.class,
                    () -> a.allocate(PAGE.withDim(2, 257), DType.BFLOAT16, MemoryFormat.KV_2LTD), "larger than a page");
            a.releaseAll(java.util.List.of(partial, third, reused));
            a.memcheck();
            assertEquals(3, a.stats().fragmentCount());
        }
    }

    @Test
    void anArenaThatIsNotWholePagesIsRefused() {
        HostArena arena = HostArena.allocate(1 << 20, HostArenaOptions.DEFAULT.withHugePages(false));
        try {
            assertThrows(IllegalArgumentException.class,
                    () -> PagedTensorMemoryAllocator.create("bad", arena, TensorShape.of(2, 3, 256, 100), DType.BFLOAT16));
        } finally {
            arena.close();
        }
    }
}
