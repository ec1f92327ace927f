package lmcache4j.server.mp.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.server.mp.store.ObjectLayout;

/**
 * Staging memory is split in two halves of half the configured size each, so a backlog of writes
 * never turns loads into misses, and both halves go back to the system on close.
 */
class StagingMemoryTest {
    /** 768 KiB: two fit in a 2 MiB half, a third does not. */
    private static final TensorShape SHAPE = ObjectLayout.kv(1, 256, 768, DType.BFLOAT16).shape();
    private static final long OBJECT = 768L << 10;

    @Test
    void eachHalfHoldsHalfTheConfiguredBytesAndNoMore() {
        try (StagingMemory staging = new StagingMemory(4L << 20)) {
            MemoryObj r1 = read(staging).orElseThrow();
            MemoryObj r2 = read(staging).orElseThrow();
            assertTrue(read(staging).isEmpty(), "a third 768 KiB read does not fit a 2 MiB read half");
            MemoryObj w1 = staging.allocateForWrite(SHAPE, DType.BFLOAT16).orElseThrow(() -> new AssertionError(
                    "a full read half leaves the write half free"));
            MemoryObj w2 = staging.allocateForWrite(SHAPE, DType.BFLOAT16).orElseThrow();
            assertTrue(staging.allocateForWrite(SHAPE, DType.BFLOAT16).isEmpty(), "nor a third write the write half");
            assertEquals(4 * OBJECT, staging.usedBytes(), "both halves counted");
            for (MemoryObj o : new MemoryObj[] {r1, r2, w1, w2}) {
                o.release();
            }
            assertEquals(0, staging.usedBytes());
        }
    }

    @Test
    void bothHalvesAreClosedWithIt() {
        StagingMemory staging = new StagingMemory(4L << 20);
        staging.close();
        assertThrows(IllegalStateException.class, () -> staging.allocateForWrite(SHAPE, DType.BFLOAT16), "the write half");
        assertThrows(IllegalStateException.class, () -> read(staging), "the read half");
    }

    private static Optional<MemoryObj> read(StagingMemory staging) {
        return staging.allocate(SHAPE, DType.BFLOAT16, MemoryFormat.BINARY, AllocationMode.EVICT);
    }
}
