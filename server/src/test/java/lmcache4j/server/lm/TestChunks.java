package lmcache4j.server.lm;

import java.nio.ByteBuffer;
import java.util.Optional;

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
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/**
 * Keys, the chunk shape and small CPU tiers the server's tests send through a client. (The
 * engine's own test helper lives in the engine's test classes, which another module cannot read.)
 */
final class TestChunks {
    /** A 64 KiB chunk: [2, 2, 256, 32] of bf16. */
    static final TensorShape CHUNK = TensorShape.of(2, 2, 256, 32);
    static final long CHUNK_BYTES = CHUNK.byteSize(DType.BFLOAT16);

    private TestChunks() {
    }

    /** The key of chunk {@code i}. */
    static CacheEngineKey key(int i) {
        return new CacheEngineKey("test/model", 1, 0, ChunkHash.of(ByteBuffer.allocate(4).putInt(i).array()), DType.BFLOAT16);
    }

    /** A CPU tier whose pool holds {@code chunks} full chunks, over real mmap memory. */
    static LocalCpuBackend cpuTier(int chunks, String policy, double blockingTimeoutSecs) {
        MixedMemoryAllocator pool = new MixedMemoryAllocator("cpu", TensorMemoryAllocator.create("cpu/kv",
                HostArena.allocate(chunks * CHUNK_BYTES, HostArenaOptions.DEFAULT.withHugePages(false)), 4096));
        return new LocalCpuBackend(pool, policy, true, blockingTimeoutSecs);
    }

    /** A full chunk whose bytes all equal {@code (byte) marker}, or empty when the tier has no room. */
    static Optional<MemoryObj> chunk(LocalCpuBackend cpu, int marker, AllocationMode mode) {
        Optional<MemoryObj> obj = cpu.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD, mode);
        obj.ifPresent(o -> o.segment().fill((byte) marker));
        return obj;
    }
}
