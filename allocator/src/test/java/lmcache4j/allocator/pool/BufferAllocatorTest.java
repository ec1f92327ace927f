package lmcache4j.allocator.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import lmcache4j.allocator.AllocatorLeakException;
import lmcache4j.allocator.AllocatorStats;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.MemoryObjMisuseException;
import lmcache4j.allocator.TensorShape;
import org.junit.jupiter.api.Test;

/** The buffer allocator has no placement of its own: what it does is the shared base's. */
class BufferAllocatorTest {

    @Test
    void buffersAreCountedPinnedAndReleasedLikeEveryOtherObject() {
        try (BufferAllocator buffers = new BufferAllocator("buffers")) {
            MemoryObj a = buffers.allocateBytes(100);
            List<MemoryObj> batch = buffers.allocateBatch(TensorShape.of(10), DType.UINT8, MemoryFormat.BINARY_BUFFER, 3)
                    .orElseThrow();
            a.pin();
            AllocatorStats s = buffers.stats();
            assertEquals(4, s.liveObjects());
            assertEquals(130, s.usedBytes());
            assertEquals(130, s.capacityBytes(), "buffers have no capacity of their own");
            assertEquals(1, s.pinnedObjects());
            assertEquals(4, s.allocations());
            buffers.memcheck();

            buffers.releaseAll(batch);
            assertThrows(MemoryObjMisuseException.class, () -> buffers.releaseAll(batch), "released twice");
            a.release();
            assertEquals(1, buffers.stats().liveObjects(), "pinned: still live");
            a.unpin();
            assertEquals(0, buffers.stats().liveObjects());
            assertEquals(0, buffers.stats().pinnedObjects());
        }
    }

    @Test
    void closingWithALiveBufferFailsAndListsIt() {
        BufferAllocator buffers = new BufferAllocator("leaky-buffers");
        MemoryObj kept = buffers.allocateBytes(8);
        AllocatorLeakException e = assertThrows(AllocatorLeakException.class, buffers::close);
        assertTrue(e.getMessage().contains("MemoryObj#" + kept.id()), e.getMessage());
        kept.release();
        buffers.close();
        assertThrows(IllegalStateException.class, () -> buffers.allocateBytes(8));
    }

    @Test
    void anotherAllocatorsObjectIsRefusedBeforeAnyIsReleased() {
        try (BufferAllocator mine = new BufferAllocator("mine"); BufferAllocator theirs = new BufferAllocator("theirs")) {
            MemoryObj own = mine.allocateBytes(8);
            MemoryObj foreign = theirs.allocateBytes(8);
            MemoryObjMisuseException e = assertThrows(MemoryObjMisuseException.class,
                    () -> mine.releaseAll(List.of(own, foreign)));
            assertTrue(e.getMessage().contains("belongs to allocator 'theirs'"), e.getMessage());
            assertEquals(1, own.refCount(), "nothing was released");
            own.release();
            foreign.release();
        }
    }

    @Test
    void onlyBinaryBuffersAreServed() {
        try (BufferAllocator buffers = new BufferAllocator("b")) {
            assertThrows(IllegalArgumentException.class,
                    () -> buffers.allocate(TensorShape.of(2, 1, 16, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD));
            assertThrows(IllegalArgumentException.class, () -> buffers.allocateBytes(0));
        }
    }
}
