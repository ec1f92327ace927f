package lmcache4j.engine.storage;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.pool.MixedMemoryAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/** Keys, chunk shapes and small CPU tiers for storage tests. */
@SuppressWarnings("exports") // test helpers of the engine's own tests
public final class TestChunks {
    /** A 64 KiB chunk: [2, 2, 256, 32] of bf16. */
    public static final TensorShape CHUNK = TensorShape.of(2, 2, 256, 32);
    public static final long CHUNK_BYTES = CHUNK.byteSize(DType.BFLOAT16);

    private TestChunks() {
    }

    /** The key of chunk {@code i}. */
    public static CacheEngineKey key(int i) {
        return new CacheEngineKey("test/model", 1, 0, ChunkHash.of(ByteBuffer.allocate(4).putInt(i).array()), DType.BFLOAT16);
    }

    public static List<CacheEngineKey> keys(int from, int to) {
        List<CacheEngineKey> keys = new ArrayList<>();
        for (int i = from; i < to; i++) {
            keys.add(key(i));
        }
        return keys;
    }

    /** A CPU tier whose pool holds {@code chunks} full chunks, over real mmap memory. */
    public static LocalCpuBackend cpuTier(int chunks, String policy, double blockingTimeoutSecs) {
        MixedMemoryAllocator pool = new MixedMemoryAllocator("cpu", TensorMemoryAllocator.create("cpu/kv",
                HostArena.allocate(chunks * CHUNK_BYTES, HostArenaOptions.DEFAULT.withHugePages(false)), 4096));
        return new LocalCpuBackend(pool, policy, true, blockingTimeoutSecs);
    }

    /** A full chunk whose bytes all equal {@code (byte) marker}, or empty when the tier has no room. */
    public static java.util.Optional<MemoryObj> chunk(LocalCpuBackend cpu, int marker, AllocationMode mode) {
        java.util.Optional<MemoryObj> obj = cpu.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD, mode);
        obj.ifPresent(o -> o.segment().fill((byte) marker));
        return obj;
    }

    /** The marker a chunk was filled with, checking every 4 KiB that the bytes agree. */
    public static int marker(MemoryObj obj) {
        byte first = obj.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0);
        for (long off = 0; off < obj.byteSize(); off += 4096) {
            if (obj.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, off) != first) {
                throw new AssertionError(obj + " holds mixed bytes: corrupted");
            }
        }
        return first;
    }
}
