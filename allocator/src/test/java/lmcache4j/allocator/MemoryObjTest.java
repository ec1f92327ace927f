package lmcache4j.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MemoryObjTest {
    private static final TensorShape CHUNK = TensorShape.of(2, 2, 256, 64);
    private final TensorMemoryAllocator allocator = TensorMemoryAllocator.strict("test", 16L << 20, 4096);

    @AfterEach
    void closeProvesNoLeak() {
        allocator.close();
    }

    private MemoryObj allocate() {
        return allocator.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
    }

    @Test
    void bornWithOneReferenceAndReturnedExactlyOnceWhenBothCountsReachZero() {
        MemoryObj obj = allocate();
        assertEquals(1, obj.refCount());
        assertTrue(obj.canEvict());
        obj.retain();
        assertFalse(obj.canEvict(), "a second reference blocks eviction");
        obj.pin();
        assertFalse(obj.release());
        assertFalse(obj.canEvict(), "a pin blocks eviction");
        assertFalse(obj.release(), "pinned with no references: memory stays");
        assertEquals(0, obj.refCount());
        assertTrue(obj.isValid());
        assertEquals(1, allocator.stats().liveObjects());
        assertTrue(obj.unpin(), "the last unpin with no references returns the memory");
        assertFalse(obj.isValid());
        assertEquals(0, allocator.stats().liveObjects());
    }

    @Test
    void tokenCountAndSizesComeFromTheMetadata() {
        MemoryObj obj = allocate();
        assertEquals(256, obj.tokenCount());
        assertEquals(2L * 2 * 256 * 64 * 2, obj.byteSize());
        assertEquals(obj.byteSize(), obj.segment().byteSize());
        assertEquals(0, obj.physicalSize() % 4096);
        assertTrue(obj.toString().startsWith("MemoryObj#" + obj.id() + "[KV_2LTD [2, 2, 256, 64] bfloat16"), obj.toString());
        obj.release();
    }

    @Test
    void everyMisuseIsRefusedWithTheObjectAndTheMisuseNamed() {
        MemoryObj obj = allocate();
        MemoryObjMisuseException unpin = assertThrows(MemoryObjMisuseException.class, obj::unpin);
        assertTrue(unpin.getMessage().contains("unpin below zero") && unpin.getMessage().contains("MemoryObj#" + obj.id()),
                unpin.getMessage());
        assertEquals(1, obj.refCount(), "a refused call changes nothing");
        obj.release();
        MemoryObjMisuseException again = assertThrows(MemoryObjMisuseException.class, obj::release);
        assertTrue(again.getMessage().contains("use after release"), again.getMessage());
        assertThrows(MemoryObjMisuseException.class, obj::retain);
        assertThrows(MemoryObjMisuseException.class, obj::pin);
        assertThrows(MemoryObjMisuseException.class, obj::segment);
        assertThrows(MemoryObjMisuseException.class, () -> allocator.releaseAll(List.of(obj)));
    }

    @Test
    void pinnedWithoutReferencesAReleaseIsBelowZero() {
        MemoryObj obj = allocate();
        obj.pin();
        obj.release();
        MemoryObjMisuseException e = assertThrows(MemoryObjMisuseException.class, obj::release);
        assertTrue(e.getMessage().contains("release below zero"), e.getMessage());
        obj.unpin();
    }

    @Test
    void strictModeMakesAStaleSegmentThrowFromTheFfmRuntime() {
        MemoryObj obj = allocate();
        var segment = obj.segment();
        segment.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 42);
        obj.release();
        assertThrows(IllegalStateException.class, () -> segment.get(java.lang.foreign.ValueLayout.JAVA_INT, 0));
    }

    @Test
    void concurrentRetainReleasePinUnpinReturnTheMemoryExactlyOnce() throws Exception {
        int threads = 8;
        int rounds = 2_000;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int trial = 0; trial < 20; trial++) {
                MemoryObj obj = allocate();
                CountDownLatch start = new CountDownLatch(1);
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    futures.add(pool.submit(() -> {
                        start.await();
                        for (int i = 0; i < rounds; i++) {
                            obj.retain();
                            obj.pin();
                            obj.unpin();
                            obj.release();
                        }
                        return null;
                    }));
                }
                start.countDown();
                for (Future<?> f : futures) {
                    f.get();
                }
                assertEquals(1, obj.refCount());
                assertEquals(0, obj.pinCount());
                assertEquals(0, allocator.stats().pinnedObjects());
                assertTrue(obj.release());
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, allocator.stats().liveObjects());
    }
}
