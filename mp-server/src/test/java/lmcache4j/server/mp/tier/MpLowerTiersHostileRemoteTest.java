package lmcache4j.server.mp.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.RemoteConnectors;
import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.store.MpStoreOptions;
import lmcache4j.server.mp.store.ObjectLayout;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * A remote store is shared: another writer can put, under the very key this server loads, an
 * object of another shape (another model's layout, or a hostile client). The load checks what it
 * read against the registered layout before it copies a byte into the pool: a miss, the pool
 * untouched, the failure counted.
 */
@Timeout(60)
class MpLowerTiersHostileRemoteTest {
    private static final ObjectLayout LAYOUT = ObjectLayout.kv(2, 16, 64, DType.BFLOAT16);
    private static final ObjectLayout SMALLER = ObjectLayout.kv(2, 16, 32, DType.BFLOAT16);
    private static final HostArenaOptions HOST = HostArenaOptions.DEFAULT.withCudaPinned(false);

    @Test
    void anObjectOfAnotherShapeUnderTheKeyIsAMissAndNothingReachesThePool() throws Exception {
        MpObjectKey key = new MpObjectKey(new byte[32], "model", MpObjectKey.kvRank(1, 0), 0, "");
        CacheEngineKey tierKey = TierKeys.of(key, LAYOUT).orElseThrow();
        try (LmCacheServer remote = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 16L << 20, Optional.empty(),
                1 << 20);
             TensorMemoryAllocator attacker = TensorMemoryAllocator.create("attacker", HostArena.allocate(1L << 20, HOST),
                     TensorMemoryAllocator.DEFAULT_ALIGNMENT);
             MpObjectStore store = new MpObjectStore(HostArena.allocate(1L << 20, HOST), MpStoreOptions.DEFAULT,
                     System::nanoTime)) {
            String url = "lm://127.0.0.1:" + remote.port();
            try (RemoteBackend writer = new RemoteBackend(RemoteConnectors.create(url),
                    (shape, dtype, format, mode) -> attacker.allocate(shape, dtype, format), 5, 5, 5)) {
                MemoryObj wrong = attacker.allocate(SMALLER.shape(), DType.BFLOAT16, MemoryFormat.BINARY).orElseThrow();
                wrong.segment().fill((byte) 0x5a);
                writer.batchedSubmitPut(List.of(tierKey), List.of(wrong));
                wrong.release();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!writer.contains(tierKey, false) && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertTrue(writer.contains(tierKey, false), "the other writer's object is in the remote");
            }
            MpL2Settings settings = MpL2Settings.NONE.withRemote(url).withStaging(4L << 20, 16)
                    .withPrefetchTimeout(Duration.ofSeconds(5));
            try (MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow()) {
                CompletableFuture<Integer> loaded = new CompletableFuture<>();
                assertTrue(tiers.prefetch(List.of(key), 1, 1, LAYOUT, loaded::complete), "a load starts");
                assertEquals(0, loaded.get(30, TimeUnit.SECONDS), "a miss");
                assertFalse(store.contains(key), "nothing was published in the pool");
                assertEquals(0, store.stats().usedBytes(), "and nothing holds pool memory");
                assertEquals(1, tiers.stats().prefetchFailures(), tiers.stats().toString());
                assertEquals(0, tiers.stats().prefetchedObjects());
            }
        }
    }
}
