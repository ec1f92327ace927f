package lmcache4j.s3;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.HostMemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.RemoteConnectorSettings;
import lmcache4j.engine.remote.RemoteHealth;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.s3.proxy.S3ProxyProcess;

/**
 * The S3 tier against a real S3 server behind {@link FaultyHttpProxy}: 503 and 500 answers are retried
 * with backoff and bounded; a slow server is a miss at the deadline whose late object is released; a
 * cut or altered body is never served; a server that goes down is marked by the health monitor while
 * the tier answers as a blackhole, and is used again when it is back.
 */
@Timeout(300)
class S3FaultTest {
    private static final String BUCKET = "faults";
    private static final TensorShape FULL = TensorShape.of(2, 2, 256, 512); // 1 MiB of bf16

    private static S3ProxyProcess server;
    private FaultyHttpProxy proxy;
    private HostMemoryAllocator memory;
    private S3Connector s3;

    @BeforeAll
    static void startServer() throws Exception {
        server = S3ProxyProcess.start(BUCKET);
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @BeforeEach
    void open() throws Exception {
        proxy = new FaultyHttpProxy(server.port());
        memory = HostMemoryAllocator.tensor("s3-faults", 32L << 20, HostArenaOptions.DEFAULT);
        Map<String, Object> config = new HashMap<>(S3ProxyProcess.credentials());
        config.put("s3_part_size", 0L);
        s3 = S3Connector.open(proxy.url(BUCKET), new RemoteConnectorSettings(config, Optional.empty()));
    }

    @AfterEach
    void close() throws Exception {
        s3.close();
        proxy.close();
        memory.close();
        if (!server.running()) {
            server.restart();
        }
    }

    private static <T> T await(CompletableFuture<T> f) throws Exception {
        return f.get(60, TimeUnit.SECONDS);
    }

    private static CacheEngineKey key(long hash) {
        return new CacheEngineKey("faulty/model", 1, 0, ChunkHash.ofLong(hash), DType.BFLOAT16);
    }

    private MemoryObj stored(CacheEngineKey key, int seed) throws Exception {
        MemoryObj obj = memory.allocate(FULL, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
        MemorySegment s = obj.segment();
        for (long i = 0; i < s.byteSize(); i += 4) {
            s.set(ValueLayout.JAVA_INT_UNALIGNED, i, (int) (i * 40503L) + seed);
        }
        await(s3.put(key, RemoteMetadata.forObject(obj), obj.segment()));
        return obj;
    }

    private Optional<MemoryObj> read(CacheEngineKey key) throws Exception {
        return await(s3.get(key, m -> memory.allocate(m.toShape(), m.dtype().orElseThrow(), m.format())));
    }

    private RemoteBackend tier(double timeoutSecs, double pingIntervalSecs) {
        return new RemoteBackend(s3, (shape, dtype, format, mode) -> memory.allocate(shape, dtype, format), timeoutSecs,
                pingIntervalSecs, 1.0);
    }

    @Test
    void unavailableAndInternalErrorsAreRetriedWithBackoffAndTheRetriesAreBounded() throws Exception {
        CacheEngineKey key = key(0x503L);
        MemoryObj obj = stored(key, 1);
        try {
            proxy.failNext.set(S3Connector.MAX_ATTEMPTS - 1); // 503 twice, then the server answers
            MemoryObj back = read(key).orElseThrow();
            back.release();
            assertEquals(S3Connector.MAX_ATTEMPTS - 1, proxy.injected.get());

            proxy.errorStatus = 500;
            proxy.failNext.set(100);
            int before = proxy.requests.get();
            long live = memory.stats().liveObjects();
            assertThrows(ExecutionException.class, () -> read(key));
            assertEquals(S3Connector.MAX_ATTEMPTS, proxy.requests.get() - before, "three attempts, no more");
            assertEquals(live, memory.stats().liveObjects(), "nothing allocated for a failed read is kept");
        } finally {
            obj.release();
        }
    }

    @Test
    void aSlowServerIsAMissAtTheDeadlineAndTheObjectThatArrivesLateIsReleased() throws Exception {
        CacheEngineKey key = key(0x510eL);
        MemoryObj obj = stored(key, 2);
        try (RemoteBackend tier = tier(0.5, 60)) {
            long live = memory.stats().liveObjects();
            proxy.delayMillis = 2000;
            assertTrue(tier.getBlocking(key).isEmpty(), "past blocking_timeout_secs: a miss");
            assertEquals(1, tier.stats().timeouts());
            for (int i = 0; i < 100 && memory.stats().liveObjects() != live; i++) {
                Thread.sleep(50);
            }
            assertEquals(live, memory.stats().liveObjects(), "the late object went back");
            proxy.delayMillis = 0;
            MemoryObj back = tier.getBlocking(key).orElseThrow();
            back.release();
        } finally {
            obj.release();
        }
    }

    @Test
    void aBodyCutShortIsNeverServed() throws Exception {
        CacheEngineKey key = key(0xc07L);
        MemoryObj obj = stored(key, 3);
        try {
            long live = memory.stats().liveObjects();
            proxy.truncateNextGets.set(100);
            proxy.truncateAt = 4096;
            Optional<MemoryObj> cut;
            try {
                cut = read(key);
            } catch (ExecutionException e) {
                cut = Optional.empty(); // the SDK's own error for the cut connection, after its retries
            }
            assertTrue(cut.isEmpty(), "a cut body is a miss or an error, never a chunk");
            assertEquals(live, memory.stats().liveObjects());
            proxy.truncateNextGets.set(0);
            MemoryObj back = read(key).orElseThrow();
            try {
                assertArrayEquals(obj.segment().toArray(ValueLayout.JAVA_BYTE), back.segment().toArray(ValueLayout.JAVA_BYTE));
            } finally {
                back.release();
            }
        } finally {
            obj.release();
        }
    }

    @Test
    void aBitFlippedOnTheWayFailsTheCrcAndIsACountedMiss() throws Exception {
        CacheEngineKey key = key(0xf11bL);
        MemoryObj obj = stored(key, 4);
        try {
            proxy.flipNextGets.set(1);
            assertTrue(read(key).isEmpty());
            assertEquals(1, s3.corruptObjects());
            assertEquals(1, proxy.injected.get());
        } finally {
            obj.release();
        }
    }

    @Test
    void aStoreThatGoesDownIsMarkedByTheHealthMonitorAndUsedAgainWhenItIsBack() throws Exception {
        CacheEngineKey key = key(0xdeadL);
        MemoryObj obj = stored(key, 5);
        try (RemoteBackend tier = tier(2.0, 0.2)) {
            assertTrue(tier.contains(key, false));
            server.stop();
            for (int i = 0; i < 200 && tier.healthy(); i++) {
                Thread.sleep(50);
            }
            assertFalse(tier.healthy(), "the health monitor swapped a blackhole in");
            assertEquals(RemoteHealth.State.UNREACHABLE, tier.stats().health().state());
            assertFalse(tier.contains(key, false), "the blackhole answers: a miss, no exception");
            tier.batchedSubmitPut(List.of(key(0xd00dL)), List.of(obj));
            assertEquals(1, tier.stats().droppedPuts(), "puts are dropped while it is down, and counted");
            server.restart();
            for (int i = 0; i < 400 && !tier.healthy(); i++) {
                Thread.sleep(50);
            }
            assertTrue(tier.healthy(), "back once pings answer");
            MemoryObj back = tier.getBlocking(key).orElseThrow();
            back.release();
        } finally {
            obj.release();
        }
    }
}
