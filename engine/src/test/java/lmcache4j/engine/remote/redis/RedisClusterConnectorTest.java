package lmcache4j.engine.remote.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.remote.RemoteConnectors;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/**
 * {@link RedisConnector} over {@code redis-cluster://} against a real three-master Redis Cluster.
 * One cluster serves the class (starting it costs a few seconds); the node-kill test runs last and
 * leaves the cluster whole again.
 */
@Timeout(180)
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
class RedisClusterConnectorTest {
    private static final int MASTERS = 3;
    @TempDir
    static Path dir;
    private static RedisClusterProcesses cluster;

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = RedisClusterProcesses.start(dir, MASTERS);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static RedisConnector connector() {
        return RedisConnector.connect(URI.create(cluster.url() + "?timeout_ms=3000"));
    }

    private static Optional<MemoryObj> alloc(LocalCpuBackend cpu, RemoteMetadata m) {
        return RedisConnectorTest.alloc(cpu, m);
    }

    private static MemoryObj chunk(LocalCpuBackend cpu, int i) {
        return RedisConnectorTest.chunk(cpu, i);
    }

    /** The node (index in slot order) that owns {@code redisKey}'s slot. */
    private static int owner(String redisKey) {
        return ownerOfSlot(SlotHash.getSlot(redisKey.getBytes(StandardCharsets.UTF_8)));
    }

    private static int ownerOfSlot(int slot) {
        for (int i = 0; i < MASTERS; i++) {
            if (slot <= (i + 1) * RedisClusterProcesses.SLOTS / MASTERS - 1) {
                return i;
            }
        }
        throw new AssertionError(slot);
    }

    private static long dbsize(int node) throws Exception {
        return Long.parseLong(RedisClusterProcesses.command(cluster.nodes().get(node).port(), "DBSIZE").substring(1));
    }

    private static boolean existsOn(int node, String redisKey) throws Exception {
        return RedisClusterProcesses.command(cluster.nodes().get(node).port(), "EXISTS", redisKey).equals(":1");
    }

    @Test
    @org.junit.jupiter.api.Order(1)
    void chunksSpreadOverEveryMasterAndRoundTrip() throws Exception {
        try (RedisConnector r = connector(); LocalCpuBackend cpu = TestChunks.cpuTier(40, "LRU", 1)) {
            assertEquals(cluster.url(), r.url());
            RedisConnectorTest.await(r.ping());
            List<MemoryObj> stored = new ArrayList<>();
            for (int i = 0; i < 24; i++) {
                MemoryObj obj = chunk(cpu, i);
                stored.add(obj);
                RedisConnectorTest.await(r.put(TestChunks.key(i), RemoteMetadata.forObject(obj), obj.segment()));
            }
            for (int n = 0; n < MASTERS; n++) {
                assertTrue(dbsize(n) > 0, "node " + n + " holds no key: the client did not route by slot");
            }
            for (int i = 0; i < 24; i++) {
                CacheEngineKey key = TestChunks.key(i);
                assertTrue(RedisConnectorTest.await(r.exists(key)));
                assertTrue(existsOn(owner(key.toKeyString() + "kv_bytes"), key.toKeyString() + "kv_bytes"));
                MemoryObj back = RedisConnectorTest.await(r.get(key, m -> alloc(cpu, m))).orElseThrow();
                assertEquals(-1L, stored.get(i).segment().mismatch(back.segment()), "chunk " + i + " differs");
                back.release();
            }
            assertTrue(RedisConnectorTest.await(r.remove(TestChunks.key(0))), "a DEL across two slots");
            assertFalse(RedisConnectorTest.await(r.exists(TestChunks.key(0))));
            assertTrue(RedisConnectorTest.await(r.get(TestChunks.key(0), m -> alloc(cpu, m))).isEmpty());
            for (int i = 1; i < 24; i++) {
                RedisConnectorTest.await(r.remove(TestChunks.key(i)));
            }
            long keys = 0;
            for (int n = 0; n < MASTERS; n++) {
                keys += dbsize(n);
            }
            assertEquals(0, keys);
            assertEquals(0, r.inflightBytes());
            stored.forEach(MemoryObj::release);
        }
    }

    @Test
    @org.junit.jupiter.api.Order(2)
    void aCorruptPayloadOnAnotherNodeFailsItsChecksum() throws Exception {
        try (RedisConnector r = connector(); LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            CacheEngineKey key = TestChunks.key(1000);
            MemoryObj obj = chunk(cpu, 1);
            RedisConnectorTest.await(r.put(key, RemoteMetadata.forObject(obj), obj.segment()));
            obj.release();
            String payloadKey = key.toKeyString() + "kv_bytes";
            RedisClusterProcesses.command(cluster.nodes().get(owner(payloadKey)).port(), "SETRANGE", payloadKey, "100", "x");
            assertTrue(RedisConnectorTest.await(r.get(key, m -> alloc(cpu, m))).isEmpty());
            assertFalse(existsOn(owner(payloadKey), payloadKey), "the corrupt payload was not deleted");
            assertFalse(RedisConnectorTest.await(r.exists(key)));
        }
    }

    /**
     * A master killed mid-workload: a put whose payload belongs to it fails and leaves no metadata
     * on the live node (payload strictly first); after the restart the chunks it held are misses
     * (its memory is gone and the orphan metadata is deleted), the rest still hit, byte for byte,
     * and new puts and gets work again.
     */
    @Test
    @org.junit.jupiter.api.Order(2)
    void theSplitLayoutSpreadsEachChunksPartsOverEveryMaster() throws Exception {
        int parts = RedisSplitLayoutTest.PARTS;
        try (lmcache4j.allocator.tensor.TensorMemoryAllocator pool = RedisSplitLayoutTest.pool(8);
             RedisConnector r = RedisConnector.connect(URI.create(cluster.url() + "?timeout_ms=3000"), RedisLayout.split(1, 2))) {
            List<MemoryObj> stored = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                CacheEngineKey key = TestChunks.key(2000 + i);
                MemoryObj obj = RedisSplitLayoutTest.chunk(pool, i);
                stored.add(obj);
                RedisConnectorTest.await(r.put(key, RemoteMetadata.forObject(obj), obj.segment()));
                java.util.Set<Integer> masters = new java.util.HashSet<>();
                for (int p = 0; p < parts; p++) {
                    String partKey = new String(SplitKeys.part(key, p, parts), StandardCharsets.UTF_8);
                    int node = owner(partKey);
                    assertTrue(existsOn(node, partKey), partKey + " is not on the master that owns its slot");
                    masters.add(node);
                }
                assertEquals(MASTERS, masters.size(), "the parts of chunk " + i + " sit on masters " + masters + " only");
            }
            for (int i = 0; i < 6; i++) {
                MemoryObj back = RedisConnectorTest.await(r.get(TestChunks.key(2000 + i),
                        m -> RedisSplitLayoutTest.alloc(pool, m))).orElseThrow();
                RedisSplitLayoutTest.assertSameBytes(stored.get(i), back);
                back.release();
            }
            // A stale part on one master is a miss that deletes the chunk's keys on all of them.
            CacheEngineKey stale = TestChunks.key(2000);
            String part2 = new String(SplitKeys.part(stale, 2, parts), StandardCharsets.UTF_8);
            RedisClusterProcesses.command(cluster.nodes().get(owner(part2)).port(), "SETRANGE", part2, "100", "x");
            assertTrue(RedisConnectorTest.await(r.get(stale, m -> RedisSplitLayoutTest.alloc(pool, m))).isEmpty());
            assertFalse(RedisConnectorTest.await(r.exists(stale)));
            for (int i = 1; i < 6; i++) {
                assertTrue(RedisConnectorTest.await(r.remove(TestChunks.key(2000 + i))));
            }
            long keys = 0;
            for (int n = 0; n < MASTERS; n++) {
                keys += dbsize(n);
            }
            assertEquals(0, keys, "a part or manifest was left on some master");
            stored.forEach(MemoryObj::release);
        }
    }

    @Test
    @org.junit.jupiter.api.Order(3)
    void aMasterKilledThenRestartedLosesOnlyItsChunksAndServesAgain() throws Exception {
        int victim = 1;
        try (RedisConnector r = connector(); LocalCpuBackend cpu = TestChunks.cpuTier(40, "LRU", 1)) {
            List<MemoryObj> stored = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                MemoryObj obj = chunk(cpu, i);
                stored.add(obj);
                RedisConnectorTest.await(r.put(TestChunks.key(100 + i), RemoteMetadata.forObject(obj), obj.segment()));
            }
            // A key whose payload lives on the victim and whose metadata lives elsewhere.
            int probe = 200;
            while (owner(TestChunks.key(probe).toKeyString() + "kv_bytes") != victim
                    || owner(TestChunks.key(probe).toKeyString() + "metadata") == victim) {
                probe++;
            }
            CacheEngineKey probeKey = TestChunks.key(probe);
            cluster.nodes().get(victim).kill();

            MemoryObj obj = chunk(cpu, 99);
            ExecutionException failed = assertThrows(ExecutionException.class,
                    () -> r.put(probeKey, RemoteMetadata.forObject(obj), obj.segment()).get(20, TimeUnit.SECONDS));
            String metaKey = probeKey.toKeyString() + "metadata";
            assertFalse(existsOn(owner(metaKey), metaKey), "metadata written although its payload failed: " + failed.getCause());
            assertEquals(0, r.inflightBytes());

            cluster.nodes().get(victim).restart();
            cluster.awaitState("ok", Duration.ofSeconds(60));
            // Lettuce reconnects with back-off; wait until a new put lands.
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (true) {
                try {
                    r.put(probeKey, RemoteMetadata.forObject(obj), obj.segment()).get(20, TimeUnit.SECONDS);
                    break;
                } catch (ExecutionException e) {
                    if (System.nanoTime() > deadline) {
                        throw e;
                    }
                    Thread.sleep(100);
                }
            }
            MemoryObj probeBack = RedisConnectorTest.await(r.get(probeKey, m -> alloc(cpu, m))).orElseThrow();
            assertEquals(-1L, obj.segment().mismatch(probeBack.segment()));
            probeBack.release();
            obj.release();

            int hits = 0;
            int lost = 0;
            for (int i = 0; i < 16; i++) {
                CacheEngineKey key = TestChunks.key(100 + i);
                Optional<MemoryObj> back = RedisConnectorTest.await(r.get(key, m -> alloc(cpu, m)));
                boolean onVictim = owner(key.toKeyString() + "kv_bytes") == victim || owner(key.toKeyString() + "metadata") == victim;
                if (back.isPresent()) {
                    assertFalse(onVictim, "chunk " + i + " served although the restarted node lost it");
                    assertEquals(-1L, stored.get(i).segment().mismatch(back.get().segment()), "chunk " + i + " corrupt");
                    back.get().release();
                    hits++;
                } else {
                    assertTrue(onVictim, "chunk " + i + " lost although its node survived");
                    assertFalse(RedisConnectorTest.await(r.exists(key)), "an orphan metadata remains for chunk " + i);
                    lost++;
                }
            }
            assertTrue(hits > 0 && lost > 0, "hits " + hits + ", lost " + lost);
            stored.forEach(MemoryObj::release);
        }
    }

    @Test
    @org.junit.jupiter.api.Order(0)
    void theUrlIsTakenByTheConnectorFactory() {
        try (var c = RemoteConnectors.create(cluster.url())) {
            assertTrue(c instanceof RedisConnector);
        }
    }
}
