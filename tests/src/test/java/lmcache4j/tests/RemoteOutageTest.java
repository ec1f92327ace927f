package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.pool.MixedMemoryAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.lm.LmConnector;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.server.lm.LmCacheServer;
import org.junit.jupiter.api.Test;

/**
 * The remote tier across an outage of its {@code lm://} server: while the server is down, stores
 * and lookups keep working on the CPU tier, remote puts are dropped and counted, remote reads miss
 * within the deadline, nothing throws and nothing leaks; once the server is back on the same port,
 * the health monitor restores the tier and remote hits resume.
 */
class RemoteOutageTest {
    private static final TensorShape CHUNK = TensorShape.of(2, 2, 64, 32);

    private static CacheEngineKey key(int i) {
        return new CacheEngineKey("outage/model", 1, 0, ChunkHash.of(ByteBuffer.allocate(4).putInt(i).array()), DType.BFLOAT16);
    }

    private static void put(StorageManager storage, LocalCpuBackend cpu, int i) {
        MemoryObj obj = cpu.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD, AllocationMode.EVICT).orElseThrow();
        obj.segment().fill((byte) i);
        storage.batchedPut(List.of(key(i)), List.of(obj), Optional.empty());
    }

    @Test
    void theEngineRidesThroughAServerOutageAndRemoteHitsResume() throws Exception {
        LmCacheServer server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 64L << 20, Optional.empty(), 16 << 20);
        int port = server.port();
        var pool = new MixedMemoryAllocator("cpu", TensorMemoryAllocator.strict("cpu/kv", 16 * CHUNK.byteSize(DType.BFLOAT16), 4096));
        LocalCpuBackend cpu = new LocalCpuBackend(pool, "LRU", true, 1);
        RemoteBackend remote = new RemoteBackend(LmConnector.connect(java.net.URI.create("lm://127.0.0.1:" + port
                + "?timeout_ms=500")), cpu, 1, 0.05, 0.5);
        try (StorageManager storage = new StorageManager(cpu, List.of(remote))) {
            put(storage, cpu, 0);
            remote.awaitPuts();
            assertEquals(1, remote.stats().puts(), () -> "the first put did not land: " + remote.stats());

            server.close(); // the outage
            awaitHealth(remote, false);
            put(storage, cpu, 1);
            assertTrue(storage.contains(key(1), false).isPresent(), "stores keep working locally");
            cpu.remove(key(0));
            long started = System.nanoTime();
            assertTrue(storage.get(key(0)).isEmpty(), "a chunk only the server had is a miss");
            assertTrue(System.nanoTime() - started < 3_000_000_000L, "and the miss comes within the deadline");
            assertTrue(remote.stats().droppedPuts() >= 1, "puts during the outage are dropped and counted");

            server = LmCacheServer.start(InetAddress.getLoopbackAddress(), port, 64L << 20, Optional.empty(), 16 << 20);
            awaitHealth(remote, true);
            put(storage, cpu, 2);
            remote.awaitPuts();
            cpu.remove(key(2));
            MemoryObj back = storage.get(key(2)).orElseThrow(() -> new AssertionError("remote hits resume after the restart"));
            assertEquals(2, back.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 100));
            back.release();
        } finally {
            server.close();
        }
        assertEquals(0, pool.stats().liveObjects(), "no reference leaked across the outage");
    }

    private static void awaitHealth(RemoteBackend remote, boolean healthy) throws InterruptedException {
        long deadline = System.nanoTime() + 15_000_000_000L;
        while (remote.healthy() != healthy && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(healthy, remote.healthy(), "health did not change within 15 s");
    }
}
