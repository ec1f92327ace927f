package lmcache4j.engine.remote.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteConnectors;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/** {@link RedisConnector} against a real {@code redis-server}. */
@Timeout(120)
class RedisConnectorTest {
    private RedisServerProcess redis;

    @BeforeEach
    void startRedis() throws Exception {
        redis = RedisServerProcess.start();
    }

    @AfterEach
    void stopRedis() throws Exception {
        if (redis != null) {
            redis.close();
        }
    }

    static <T> T await(CompletableFuture<T> f) throws Exception {
        return f.get(20, TimeUnit.SECONDS);
    }

    private RedisConnector connector(String query) {
        return RedisConnector.connect(URI.create(redis.url() + query));
    }

    /** Every chunk of a four-chunk tier can be allocated: nothing read into it was kept. */
    private static void assertAllFourChunksFree(LocalCpuBackend cpu) {
        List<MemoryObj> all = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            all.add(TestChunks.chunk(cpu, i, AllocationMode.NO_EVICTION).orElseThrow());
        }
        all.forEach(MemoryObj::release);
    }

    static Optional<MemoryObj> alloc(LocalCpuBackend cpu, RemoteMetadata m) {
        return cpu.allocate(m.toShape(), m.dtype().orElseThrow(), m.format(), AllocationMode.NO_EVICTION);
    }

    static MemoryObj chunk(LocalCpuBackend cpu, int i) {
        MemoryObj obj = TestChunks.chunk(cpu, 10 + i, AllocationMode.NO_EVICTION).orElseThrow();
        obj.segment().set(ValueLayout.JAVA_INT_UNALIGNED, 8, 0x12345678 + i);
        return obj;
    }

    private static void assertSameBytes(MemoryObj expected, MemoryObj actual) {
        assertEquals(expected.byteSize(), actual.byteSize());
        assertEquals(-1L, expected.segment().mismatch(actual.segment()), "payload bytes differ");
    }

    private StatefulRedisConnection<byte[], byte[]> raw(RedisClient client) {
        return client.connect(ByteArrayCodec.INSTANCE);
    }

    @Test
    void putGetExistsRemovePingRoundTrip() throws Exception {
        try (RedisConnector r = connector(""); LocalCpuBackend cpu = TestChunks.cpuTier(16, "LRU", 1)) {
            assertEquals(redis.url(), r.url());
            await(r.ping());
            List<MemoryObj> stored = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                MemoryObj obj = chunk(cpu, i);
                stored.add(obj);
                await(r.put(TestChunks.key(i), RemoteMetadata.forObject(obj), obj.segment()));
            }
            for (int i = 0; i < 6; i++) {
                assertTrue(await(r.exists(TestChunks.key(i))));
                MemoryObj back = await(r.get(TestChunks.key(i), m -> alloc(cpu, m))).orElseThrow();
                assertSameBytes(stored.get(i), back);
                assertEquals(stored.get(i).shape(), back.shape());
                assertEquals(stored.get(i).dtype(), back.dtype());
                assertEquals(stored.get(i).format(), back.format());
                back.release();
            }
            assertFalse(await(r.exists(TestChunks.key(99))));
            assertTrue(await(r.get(TestChunks.key(99), m -> alloc(cpu, m))).isEmpty());
            assertTrue(await(r.remove(TestChunks.key(0))));
            assertFalse(await(r.remove(TestChunks.key(0))));
            assertFalse(await(r.exists(TestChunks.key(0))));
            assertTrue(await(r.get(TestChunks.key(0), m -> alloc(cpu, m))).isEmpty());
            assertEquals(0, r.inflightBytes());
            stored.forEach(MemoryObj::release);
        }
    }

    @Test
    void noMemoryForTheGetIsAMissAndAShortObjectIsReleased() throws Exception {
        try (RedisConnector r = connector(""); LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            MemoryObj obj = chunk(cpu, 1);
            await(r.put(TestChunks.key(1), RemoteMetadata.forObject(obj), obj.segment()));
            assertTrue(await(r.get(TestChunks.key(1), m -> Optional.empty())).isEmpty());
            obj.release();
        }
    }

    @Test
    void keysFollowLmCachesLayout() throws Exception {
        RedisClient client = RedisClient.create(redis.url());
        try (RedisConnector r = connector(""); LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1);
             StatefulRedisConnection<byte[], byte[]> c = raw(client)) {
            CacheEngineKey key = TestChunks.key(7);
            MemoryObj obj = chunk(cpu, 7);
            RemoteMetadata meta = RemoteMetadata.forObject(obj);
            await(r.put(key, meta, obj.segment()));
            RedisCommands<byte[], byte[]> sync = c.sync();
            byte[] metadata = sync.get((key.toKeyString() + "metadata").getBytes(StandardCharsets.UTF_8));
            byte[] payload = sync.get((key.toKeyString() + "kv_bytes").getBytes(StandardCharsets.UTF_8));
            assertNotNull(metadata);
            assertNotNull(payload);
            // LMCache's 28-byte header first (its reader, struct.unpack_from, ignores what follows),
            // then "L4JC" and the payload's CRC32C, both little-endian.
            assertEquals(RemoteMetadata.BYTES + MetadataTrailer.BYTES, metadata.length);
            assertArrayEquals(meta.toBytes(), java.util.Arrays.copyOf(metadata, RemoteMetadata.BYTES));
            assertEquals(meta, RemoteMetadata.decode(metadata));
            java.nio.ByteBuffer trailer = java.nio.ByteBuffer.wrap(metadata, RemoteMetadata.BYTES, MetadataTrailer.BYTES)
                    .order(java.nio.ByteOrder.LITTLE_ENDIAN);
            assertEquals("L4JC", new String(metadata, RemoteMetadata.BYTES, 4, StandardCharsets.US_ASCII));
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            crc.update(payload);
            assertEquals((int) crc.getValue(), trailer.getInt(RemoteMetadata.BYTES + 4));
            assertEquals(obj.byteSize(), payload.length);
            assertEquals(-1L, obj.segment().mismatch(MemorySegment.ofArray(payload)));
            assertEquals(2L, sync.dbsize());

            // checksum=none writes LMCache's bare header
            try (RedisConnector bare = connector("?checksum=none")) {
                await(bare.put(TestChunks.key(8), meta, obj.segment()));
            }
            assertArrayEquals(meta.toBytes(), sync.get((TestChunks.key(8).toKeyString() + "metadata").getBytes(StandardCharsets.UTF_8)));
            obj.release();
        } finally {
            client.shutdown();
        }
    }

    @Test
    void anEntryLmCacheWroteHasNoChecksumAndIsServed() throws Exception {
        RedisClient client = RedisClient.create(redis.url());
        try (RedisConnector r = connector(""); LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1);
             StatefulRedisConnection<byte[], byte[]> c = raw(client)) {
            CacheEngineKey key = TestChunks.key(5);
            MemoryObj obj = chunk(cpu, 5);
            // What LMCache's RedisConnector writes: the payload, then the bare 28-byte header.
            c.sync().set((key.toKeyString() + "kv_bytes").getBytes(StandardCharsets.UTF_8), obj.segment().toArray(ValueLayout.JAVA_BYTE));
            c.sync().set((key.toKeyString() + "metadata").getBytes(StandardCharsets.UTF_8), RemoteMetadata.forObject(obj).toBytes());
            MemoryObj back = await(r.get(key, m -> alloc(cpu, m))).orElseThrow();
            assertSameBytes(obj, back);
            back.release();
            obj.release();
        } finally {
            client.shutdown();
        }
    }

    @Test
    void aCorruptPayloadFailsItsChecksumAndIsAMissThatDeletesTheEntry() throws Exception {
        RedisClient client = RedisClient.create(redis.url());
        try (RedisConnector r = connector(""); LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1);
             StatefulRedisConnection<byte[], byte[]> c = raw(client)) {
            CacheEngineKey key = TestChunks.key(6);
            MemoryObj obj = chunk(cpu, 6);
            await(r.put(key, RemoteMetadata.forObject(obj), obj.segment()));
            byte[] payloadKey = (key.toKeyString() + "kv_bytes").getBytes(StandardCharsets.UTF_8);
            // One flipped bit, same length: only the checksum can tell.
            c.sync().setrange(payloadKey, obj.byteSize() / 2, new byte[] {(byte) (obj.segment().get(ValueLayout.JAVA_BYTE, obj.byteSize() / 2) ^ 1)});
            obj.release();
            assertTrue(await(r.get(key, m -> alloc(cpu, m))).isEmpty(), "a corrupt payload was served");
            assertEquals(0L, c.sync().dbsize(), "the corrupt entry was not deleted");
            // the object read into was released: all four chunks can be allocated again
            assertAllFourChunksFree(cpu);
        } finally {
            client.shutdown();
        }
    }

    @Test
    void aMissingPayloadIsAMissThatDeletesTheOrphanMetadata() throws Exception {
        RedisClient client = RedisClient.create(redis.url());
        try (RedisConnector r = connector(""); LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1);
             StatefulRedisConnection<byte[], byte[]> c = raw(client)) {
            CacheEngineKey key = TestChunks.key(3);
            MemoryObj obj = chunk(cpu, 3);
            await(r.put(key, RemoteMetadata.forObject(obj), obj.segment()));
            obj.release();
            byte[] metaKey = (key.toKeyString() + "metadata").getBytes(StandardCharsets.UTF_8);
            assertEquals(1L, c.sync().del((key.toKeyString() + "kv_bytes").getBytes(StandardCharsets.UTF_8)));
            assertTrue(await(r.exists(key)));
            List<MemoryObj> allocated = new ArrayList<>();
            Optional<MemoryObj> got = await(r.get(key, m -> {
                Optional<MemoryObj> o = alloc(cpu, m);
                o.ifPresent(allocated::add);
                return o;
            }));
            assertTrue(got.isEmpty());
            assertEquals(1, allocated.size());
            assertEquals(0L, c.sync().exists(metaKey), "orphan metadata not deleted");
            assertFalse(await(r.exists(key)));
            // the object was given back: the tier can hand out all four chunks again
            assertAllFourChunksFree(cpu);
        } finally {
            client.shutdown();
        }
    }

    @Test
    void aPayloadOfTheWrongLengthIsAMiss() throws Exception {
        RedisClient client = RedisClient.create(redis.url());
        try (RedisConnector r = connector(""); LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1);
             StatefulRedisConnection<byte[], byte[]> c = raw(client)) {
            CacheEngineKey key = TestChunks.key(4);
            MemoryObj obj = chunk(cpu, 4);
            await(r.put(key, RemoteMetadata.forObject(obj), obj.segment()));
            obj.release();
            c.sync().set((key.toKeyString() + "kv_bytes").getBytes(StandardCharsets.UTF_8), new byte[100]);
            assertTrue(await(r.get(key, m -> alloc(cpu, m))).isEmpty());
        } finally {
            client.shutdown();
        }
    }

    @Test
    void aRedisKilledMidWorkloadFailsOperationsThenServesAgainAfterRestart() throws Exception {
        try (RedisConnector r = connector("?timeout_ms=2000"); LocalCpuBackend cpu = TestChunks.cpuTier(16, "LRU", 1)) {
            MemoryObj obj = chunk(cpu, 1);
            RemoteMetadata meta = RemoteMetadata.forObject(obj);
            for (int i = 0; i < 4; i++) {
                await(r.put(TestChunks.key(i), meta, obj.segment()));
            }
            // a workload in flight while the server dies
            List<CompletableFuture<?>> inFlight = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                inFlight.add(r.put(TestChunks.key(100 + i), meta, obj.segment()));
                inFlight.add(r.get(TestChunks.key(i % 4), m -> alloc(cpu, m)).thenApply(o -> {
                    o.ifPresent(MemoryObj::release);
                    return o;
                }));
            }
            redis.kill();
            for (CompletableFuture<?> f : inFlight) {
                try {
                    f.get(10, TimeUnit.SECONDS); // completes one way or the other, never hangs
                } catch (ExecutionException expected) {
                    // failed by the kill
                }
            }
            long t0 = System.nanoTime();
            assertThrows(ExecutionException.class, () -> r.ping().get(10, TimeUnit.SECONDS));
            assertThrows(ExecutionException.class, () -> r.exists(TestChunks.key(0)).get(10, TimeUnit.SECONDS));
            assertThrows(ExecutionException.class, () -> r.put(TestChunks.key(9), meta, obj.segment()).get(10, TimeUnit.SECONDS));
            assertThrows(ExecutionException.class,
                    () -> r.get(TestChunks.key(0), m -> alloc(cpu, m)).get(10, TimeUnit.SECONDS));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(20), "failures took too long");
            assertEquals(0, r.inflightBytes());

            redis.restart();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                try {
                    r.ping().get(10, TimeUnit.SECONDS);
                    break;
                } catch (ExecutionException e) {
                    if (System.nanoTime() > deadline) {
                        throw new AssertionError("the connector did not reconnect within 30 s", e);
                    }
                    Thread.sleep(50);
                }
            }
            await(r.put(TestChunks.key(5), meta, obj.segment()));
            MemoryObj back = await(r.get(TestChunks.key(5), m -> alloc(cpu, m))).orElseThrow();
            assertSameBytes(obj, back);
            back.release();
            obj.release();
        }
    }

    @Test
    void aSlowRedisTurnsTierGetsIntoTimedOutMissesAndTheLateRepliesLeakNothing() throws Exception {
        RedisClient client = RedisClient.create(redis.url());
        try (LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
             RemoteBackend remote = new RemoteBackend(connector("?timeout_ms=20000"), cpu, 0.3, 3600, 1, false,
                     "naive");
             StatefulRedisConnection<byte[], byte[]> admin = raw(client)) {
            MemoryObj obj = chunk(cpu, 4);
            remote.batchedSubmitPut(List.of(TestChunks.key(4)), List.of(obj));
            remote.awaitPuts();
            assertTrue(remote.contains(TestChunks.key(4), false));
            // CLIENT PAUSE answers once the pause is in force: every command sent after its OK waits for
            // the pause to end. So the gets below outlive their deadlines by construction, with seconds
            // to spare (a DEBUG SLEEP sent asynchronously may not have started when the first get goes).
            long pauseMs = 5_000;
            long pauseSent = System.nanoTime();
            assertEquals("OK", admin.sync().clientPause(pauseMs));
            int slowGets = 6; // 6 × 0.3 s deadlines, well inside the pause
            for (int i = 0; i < slowGets; i++) {
                assertTrue(remote.getBlocking(TestChunks.key(4)).isEmpty(), "a get that outlives the deadline is a miss");
            }
            long elapsedMs = (System.nanoTime() - pauseSent) / 1_000_000;
            assertTrue(elapsedMs < pauseMs, "each miss came at its 0.3 s deadline, not when Redis resumed: " + elapsedMs);
            assertEquals(slowGets, remote.stats().timeouts());
            // The late replies arrive into objects the tier releases once the pause ends; then Redis serves again.
            Thread.sleep(pauseMs - elapsedMs);
            MemoryObj back = awaitHit(remote, TestChunks.key(4));
            assertSameBytes(obj, back);
            back.release();
            obj.release();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (cpu.allocator().stats().usedBytes() != 0 && System.nanoTime() < deadline) {
                Thread.sleep(10); // the late replies' releases run on Lettuce's threads
            }
            assertEquals(0, cpu.allocator().stats().usedBytes(), "every late reply was released");
        } finally {
            client.shutdown();
        }
    }

    /** The first hit for {@code key} within 10 s (gets right after a pause may still miss at their deadline). */
    private static MemoryObj awaitHit(RemoteBackend remote, CacheEngineKey key) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            Optional<MemoryObj> hit = remote.getBlocking(key);
            if (hit.isPresent()) {
                return hit.get();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no hit within 10 s after the pause: " + remote.stats());
            }
            Thread.sleep(50);
        }
    }

    /** A self-signed certificate for 127.0.0.1 (openssl, installed by the launcher with redis-server). */
    private static void selfSignedCertificate(java.nio.file.Path cert, java.nio.file.Path key) throws Exception {
        Process p = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                "-keyout", key.toString(), "-out", cert.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "openssl failed: " + out);
    }

    @Test
    void redissRoundTripsThroughTlsWithAPrivateCaAndRefusesAnUntrustedServer(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        java.nio.file.Path cert = dir.resolve("server.pem");
        java.nio.file.Path key = dir.resolve("server.key");
        selfSignedCertificate(cert, key);
        int tlsPort = RedisServerProcess.freePort();
        try (RedisServerProcess tls = RedisServerProcess.start(List.of("--tls-port", Integer.toString(tlsPort),
                "--tls-cert-file", cert.toString(), "--tls-key-file", key.toString(), "--tls-auth-clients", "no"));
             LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            String url = "rediss://127.0.0.1:" + tlsPort;
            MemoryObj obj = chunk(cpu, 7);
            RemoteMetadata meta = RemoteMetadata.forObject(obj);
            try (RedisConnector r = RedisConnector.connect(URI.create(url + "?timeout_ms=5000&tls_ca_file=" + cert))) {
                await(r.put(TestChunks.key(7), meta, obj.segment()));
                MemoryObj back = await(r.get(TestChunks.key(7), m -> alloc(cpu, m))).orElseThrow();
                assertSameBytes(obj, back);
                back.release();
            }
            // Without the CA the JDK's trust store rejects the self-signed certificate: a failed ping, no exception.
            try (RedisConnector r = RedisConnector.connect(URI.create(url + "?timeout_ms=2000"))) {
                assertThrows(ExecutionException.class, () -> r.ping().get(20, TimeUnit.SECONDS));
            }
            // tls_ca_file belongs to rediss:// only, and must name a readable file.
            assertThrows(IllegalArgumentException.class,
                    () -> RedisConnector.connect(URI.create("redis://127.0.0.1:" + tls.port() + "?tls_ca_file=" + cert)));
            assertThrows(IllegalArgumentException.class,
                    () -> RedisConnector.connect(URI.create(url + "?tls_ca_file=" + dir.resolve("missing.pem"))));
            IllegalArgumentException notACert = assertThrows(IllegalArgumentException.class,
                    () -> RedisConnector.connect(URI.create(url + "?tls_ca_file=" + key)), "a private key is not a CA");
            assertTrue(notACert.getMessage().contains("tls_ca_file"), notACert.getMessage());
            obj.release();
        }
    }

    @Test
    void redisSentinelFindsTheMasterByServiceName(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        try (RedisServerProcess sentinel = RedisServerProcess.startSentinel("kvmaster", redis.port(), dir);
             LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            MemoryObj obj = chunk(cpu, 8);
            String sentinels = "redis-sentinel://127.0.0.1:" + RedisServerProcess.freePort() + ",127.0.0.1:" + sentinel.port();
            // The first sentinel listed is down: Lettuce asks the next one.
            try (RemoteConnector r = RemoteConnectors.create(sentinels + "?service_name=kvmaster&timeout_ms=5000")) {
                assertTrue(r.url().contains("(master kvmaster)"), r.url());
                await(r.put(TestChunks.key(8), RemoteMetadata.forObject(obj), obj.segment()));
            }
            // The chunk is on the master itself, in LMCache's layout.
            try (RedisConnector direct = connector("?timeout_ms=5000")) {
                MemoryObj back = await(direct.get(TestChunks.key(8), m -> alloc(cpu, m))).orElseThrow();
                assertSameBytes(obj, back);
                back.release();
            }
            try (RemoteConnector r = RemoteConnectors.create(sentinels + "?service_name=nosuchmaster&timeout_ms=2000")) {
                assertThrows(ExecutionException.class, () -> r.ping().get(20, TimeUnit.SECONDS), "an unknown master fails, not throws");
            }
            assertThrows(IllegalArgumentException.class, () -> RemoteConnectors.create("redis-sentinel://127.0.0.1:x,h:1"));
            assertThrows(IllegalArgumentException.class, () -> RemoteConnectors.create("redis-sentinel://,127.0.0.1:1"));
            assertThrows(IllegalArgumentException.class,
                    () -> RemoteConnectors.create("redis-sentinel://127.0.0.1:1?service_name="));
            obj.release();
        }
    }

    @Test
    void putsBeyondTheInflightBoundFailInsteadOfQueueing() throws Exception {
        try (RedisConnector r = connector("?max_inflight_mb=1&timeout_ms=30000");
             LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            MemoryObj obj = chunk(cpu, 1);
            RemoteMetadata meta = RemoteMetadata.forObject(obj);
            await(r.ping()); // connected before the pause
            redis.suspend();
            List<CompletableFuture<Void>> puts = new ArrayList<>();
            try {
                int fit = (int) ((1 << 20) / obj.byteSize());
                for (int i = 0; i < fit; i++) {
                    puts.add(r.put(TestChunks.key(i), meta, obj.segment()));
                }
                assertEquals((long) fit * obj.byteSize(), r.inflightBytes());
                CompletableFuture<Void> refused = r.put(TestChunks.key(fit), meta, obj.segment());
                ExecutionException e = assertThrows(ExecutionException.class, () -> refused.get(1, TimeUnit.SECONDS));
                assertInstanceOf(RedisConnector.RedisBackpressureException.class, e.getCause());
            } finally {
                redis.resume();
            }
            for (CompletableFuture<Void> p : puts) {
                await(p);
            }
            assertEquals(0, r.inflightBytes());
            assertTrue(await(r.exists(TestChunks.key(0))));
            obj.release();
        }
    }

    @Test
    void urlsAreParsedAndCredentialsKeptOutOfTheName() {
        try (RemoteConnector c = RemoteConnectors.create("redis://user:secret@127.0.0.1:6390/2?timeout_ms=500")) {
            assertInstanceOf(RedisConnector.class, c);
            assertEquals("redis://127.0.0.1:6390/2", c.url());
        }
        try (RemoteConnector c = RemoteConnectors.create("rediss://:pw@localhost")) {
            assertEquals("rediss://localhost:6379", c.url());
        }
        assertThrows(IllegalArgumentException.class, () -> RemoteConnectors.create("redis://127.0.0.1:6379?bogus=1"));
        assertThrows(IllegalArgumentException.class, () -> RemoteConnectors.create("redis://127.0.0.1:6379/x"));
        assertThrows(IllegalArgumentException.class, () -> RemoteConnectors.create("redis://127.0.0.1:6379?timeout_ms=0"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RemoteConnectors.create("redis://u:hunter2@127.0.0.1:6379?max_inflight_mb=x"));
        assertFalse(e.getMessage().contains("hunter2"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RemoteConnectors.create("redis://127.0.0.1:6379?checksum=md5"));
        assertThrows(IllegalArgumentException.class, () -> RemoteConnectors.create("redis-cluster://127.0.0.1:7000/1"));
        assertThrows(IllegalArgumentException.class, () -> RemoteConnectors.create("redis-cluster://127.0.0.1:7000,:7001"));
        assertThrows(IllegalArgumentException.class,
                () -> RemoteConnectors.create("redis-cluster://127.0.0.1:7000?tls_ca_file=/etc/hostname"));
        try (RemoteConnector c = RemoteConnectors.create("redis-cluster://u:hunter2@127.0.0.1:7000,10.0.0.2?checksum=none")) {
            assertEquals("redis-cluster://127.0.0.1:7000,10.0.0.2:6379", c.url());
        }
    }

    @Test
    void anUnreachableServerFailsOperationsWithoutThrowing() throws Exception {
        int port = redis.port();
        redis.stop();
        try (RedisConnector r = RedisConnector.connect(URI.create("redis://127.0.0.1:" + port + "?timeout_ms=1000"))) {
            assertThrows(ExecutionException.class, () -> r.ping().get(10, TimeUnit.SECONDS));
            assertThrows(ExecutionException.class, () -> r.exists(TestChunks.key(1)).get(10, TimeUnit.SECONDS));
        }
    }
}
