package lmcache4j.engine.remote.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
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

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.storage.TestChunks;

/**
 * The split layout of {@link RedisConnector} against a real {@code redis-server}: chunks of 3.5 MiB
 * in 1 MiB parts (four parts, the last one half full), beside LMCache's layout in the same Redis, and
 * the faults a shared cache meets: a part deleted, overwritten by another writer, cut short; a
 * manifest truncated or foreign; a put that fails half-way; the server killed during gets. Every test
 * closes its allocator, which fails when an object was not given back.
 */
@Timeout(120)
class RedisSplitLayoutTest {
    /** 3.5 MiB: [2, 7, 256, 512] of bf16. */
    static final TensorShape SHAPE = TensorShape.of(2, 7, 256, 512);
    static final long BYTES = SHAPE.byteSize(DType.BFLOAT16);
    static final int PARTS = 4;

    private RedisServerProcess redis;
    private RedisClient client;
    private StatefulRedisConnection<byte[], byte[]> rawConnection;
    private RedisCommands<byte[], byte[]> raw;

    @BeforeEach
    void startRedis() throws Exception {
        redis = RedisServerProcess.start();
        client = RedisClient.create(redis.url());
        rawConnection = client.connect(ByteArrayCodec.INSTANCE);
        raw = rawConnection.sync();
    }

    @AfterEach
    void stopRedis() {
        if (rawConnection != null) {
            rawConnection.close();
        }
        if (client != null) {
            client.shutdown();
        }
        if (redis != null) {
            redis.close();
        }
    }

    private RedisConnector split(String query) {
        return RedisConnector.connect(URI.create(redis.url() + query), RedisLayout.split(1, 3));
    }

    /** An allocator of {@code chunks} chunks; closing it fails if any object is still held. */
    static TensorMemoryAllocator pool(int chunks) {
        return TensorMemoryAllocator.create("split-test", HostArena.allocate(chunks * (BYTES + 4096),
                HostArenaOptions.DEFAULT.withHugePages(false).withCudaPinned(false)), 4096);
    }

    /** A chunk of random bytes from {@code seed}. */
    static MemoryObj chunk(TensorMemoryAllocator pool, long seed) {
        MemoryObj obj = pool.allocate(SHAPE, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < BYTES / 8; i++) {
            obj.segment().setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        return obj;
    }

    static Optional<MemoryObj> alloc(TensorMemoryAllocator pool, RemoteMetadata m) {
        return pool.allocate(m.toShape(), m.dtype().orElseThrow(), m.format());
    }

    static <T> T await(CompletableFuture<T> f) throws Exception {
        return f.get(20, TimeUnit.SECONDS);
    }

    static void assertSameBytes(MemoryObj expected, MemoryObj actual) {
        assertEquals(-1L, expected.segment().mismatch(actual.segment().asSlice(0, expected.byteSize())), "payload bytes differ");
    }

    private static byte[] part(CacheEngineKey key, int i) {
        return SplitKeys.part(key, i, PARTS);
    }

    private static String text(byte[] key) {
        return new String(key, StandardCharsets.UTF_8);
    }

    private List<String> keys() {
        return raw.keys("*".getBytes(StandardCharsets.UTF_8)).stream().map(RedisSplitLayoutTest::text).sorted().toList();
    }

    /** Stores chunk {@code seed} under {@code key} and checks it is stored whole. */
    private MemoryObj putOne(RedisConnector r, TensorMemoryAllocator pool, CacheEngineKey key, long seed) throws Exception {
        MemoryObj obj = chunk(pool, seed);
        await(r.put(key, RemoteMetadata.forObject(obj), obj.segment()));
        assertTrue(await(r.exists(key)));
        return obj;
    }

    @Test
    void chunksRoundTripInPartsBesideLmCachesLayoutInOneRedis() throws Exception {
        try (TensorMemoryAllocator pool = pool(6);
             RedisConnector r = split("?timeout_ms=5000");
             RedisConnector lmcache = RedisConnector.connect(URI.create(redis.url() + "?timeout_ms=5000"))) {
            assertEquals("split", r.layout().name());
            assertEquals("single", lmcache.layout().name());
            CacheEngineKey key = TestChunks.key(7);
            MemoryObj mine = putOne(r, pool, key, 1);
            MemoryObj theirs = chunk(pool, 2);
            await(lmcache.put(key, RemoteMetadata.forObject(theirs), theirs.segment()));

            // The same chunk key in both layouts: seven distinct Redis keys, none shared.
            List<String> expected = new ArrayList<>(List.of(key.toKeyString() + "kv_bytes", key.toKeyString() + "metadata",
                    text(SplitKeys.manifest(key))));
            for (int i = 0; i < PARTS; i++) {
                expected.add(text(part(key, i)));
                assertEquals(i < PARTS - 1 ? 1 << 20 : BYTES - 3 * (1 << 20), raw.strlen(part(key, i)), "part " + i);
            }
            assertEquals(expected.stream().sorted().toList(), keys());

            MemoryObj back = await(r.get(key, m -> alloc(pool, m))).orElseThrow();
            assertSameBytes(mine, back);
            back.release();
            MemoryObj backTheirs = await(lmcache.get(key, m -> alloc(pool, m))).orElseThrow();
            assertSameBytes(theirs, backTheirs);
            backTheirs.release();

            assertTrue(await(r.remove(key)));
            assertFalse(await(r.exists(key)));
            assertFalse(await(r.remove(key)));
            assertEquals(List.of(key.toKeyString() + "kv_bytes", key.toKeyString() + "metadata"), keys(),
                    "removing the split entry touched LMCache's");
            assertTrue(await(r.get(key, m -> alloc(pool, m))).isEmpty());
            assertTrue(await(lmcache.exists(key)));
            mine.release();
            theirs.release();
        }
    }

    @Test
    void noMemoryForTheGetIsAMissThatKeepsTheEntry() throws Exception {
        try (TensorMemoryAllocator pool = pool(2); RedisConnector r = split("")) {
            CacheEngineKey key = TestChunks.key(1);
            putOne(r, pool, key, 1).release();
            assertTrue(await(r.get(key, m -> Optional.empty())).isEmpty());
            assertTrue(await(r.exists(key)));
        }
    }

    @Test
    void aDeletedPartIsAMissThatDeletesTheRest() throws Exception {
        try (TensorMemoryAllocator pool = pool(2); RedisConnector r = split("")) {
            CacheEngineKey key = TestChunks.key(2);
            putOne(r, pool, key, 1).release();
            assertEquals(1, raw.del(part(key, 2)));
            assertTrue(await(r.get(key, m -> alloc(pool, m))).isEmpty());
            assertEquals(List.of(), keys(), "the manifest and the other parts were left behind");
            assertFalse(await(r.exists(key)));
        }
    }

    @Test
    void aPartOverwrittenByAnotherWriterIsAStaleMissThatDeletesTheRest() throws Exception {
        try (TensorMemoryAllocator pool = pool(3); RedisConnector r = split("")) {
            CacheEngineKey key = TestChunks.key(3);
            putOne(r, pool, key, 1).release();
            // Another writer's part 1: the same length, other bytes (what a concurrent put of other data leaves).
            MemoryObj other = chunk(pool, 99);
            byte[] stale = other.segment().asSlice(1 << 20, 1 << 20).toArray(ValueLayout.JAVA_BYTE);
            other.release();
            raw.set(part(key, 1), stale);
            assertTrue(await(r.get(key, m -> alloc(pool, m))).isEmpty());
            assertEquals(List.of(), keys());
        }
    }

    @Test
    void aPartOfTheWrongLengthIsAMiss() throws Exception {
        try (TensorMemoryAllocator pool = pool(2); RedisConnector r = split("")) {
            CacheEngineKey key = TestChunks.key(4);
            putOne(r, pool, key, 1).release();
            raw.append(part(key, 3), new byte[] {1, 2, 3});
            assertTrue(await(r.get(key, m -> alloc(pool, m))).isEmpty());
            assertEquals(List.of(), keys());
        }
    }

    @Test
    void aTruncatedManifestIsAMissThatDeletesItAndItsParts() throws Exception {
        try (TensorMemoryAllocator pool = pool(2); RedisConnector r = split("")) {
            CacheEngineKey key = TestChunks.key(5);
            putOne(r, pool, key, 1).release();
            byte[] manifest = raw.get(SplitKeys.manifest(key));
            raw.set(SplitKeys.manifest(key), Arrays.copyOf(manifest, manifest.length - 6));
            assertTrue(await(r.get(key, m -> alloc(pool, m))).isEmpty());
            assertEquals(List.of(), keys(), "the header still names the parts, so they go too");
        }
    }

    @Test
    void aForeignOrCorruptManifestIsAMiss() throws Exception {
        try (TensorMemoryAllocator pool = pool(2); RedisConnector r = split("")) {
            CacheEngineKey key = TestChunks.key(6);
            putOne(r, pool, key, 1).release();
            byte[] manifest = raw.get(SplitKeys.manifest(key));
            manifest[SplitManifest.FIXED + 2] ^= 0x40; // inside the metadata: only the manifest's own CRC sees it
            raw.set(SplitKeys.manifest(key), manifest);
            assertTrue(await(r.get(key, m -> alloc(pool, m))).isEmpty());
            assertEquals(List.of(), keys());

            raw.set(SplitKeys.manifest(key), "not a manifest".getBytes(StandardCharsets.UTF_8));
            assertTrue(await(r.get(key, m -> alloc(pool, m))).isEmpty());
            assertEquals(List.of(), keys());
        }
    }

    @Test
    void aPutThatFailsHalfWayWritesNoManifestAndDropsItsParts() throws Exception {
        try (TensorMemoryAllocator pool = pool(2); RedisConnector r = split("")) {
            // Room for about one part above what an empty server uses: later parts are refused.
            long used = Long.parseLong(raw.info("memory").lines().filter(l -> l.startsWith("used_memory:")).findFirst()
                    .orElseThrow().substring("used_memory:".length()).strip());
            raw.configSet("maxmemory-policy", "noeviction");
            raw.configSet("maxmemory", Long.toString(used + (3 << 19)));
            CacheEngineKey key = TestChunks.key(8);
            MemoryObj obj = chunk(pool, 1);
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> await(r.put(key, RemoteMetadata.forObject(obj), obj.segment())));
            assertTrue(e.getCause().getMessage().contains("OOM"), e.getCause().toString());
            obj.release();
            assertFalse(await(r.exists(key)), "a manifest was written for parts that are not all stored");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!keys().isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(List.of(), keys(), "the parts that were stored are deleted");
            assertEquals(0, r.inflightBytes());
        }
    }

    @Test
    void aRedisKilledDuringGetsFailsOrMissesThemNeverCorruptsAndLeaksNothing() throws Exception {
        try (TensorMemoryAllocator pool = pool(16); RedisConnector r = split("?timeout_ms=2000")) {
            List<MemoryObj> stored = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                stored.add(putOne(r, pool, TestChunks.key(10 + i), 10 + i));
            }
            List<CompletableFuture<Optional<MemoryObj>>> gets = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 4; i++) {
                    gets.add(r.get(TestChunks.key(10 + i), m -> alloc(pool, m)));
                }
            }
            redis.kill();
            int served = 0;
            int failed = 0;
            for (int g = 0; g < gets.size(); g++) {
                try {
                    Optional<MemoryObj> got = gets.get(g).get(20, TimeUnit.SECONDS);
                    if (got.isPresent()) {
                        assertSameBytes(stored.get(g % 4), got.get()); // served whole, or not at all
                        got.get().release();
                        served++;
                    }
                } catch (ExecutionException expected) {
                    failed++;
                }
            }
            assertEquals(gets.size(), gets.stream().filter(CompletableFuture::isDone).count());
            assertTrue(served + failed <= gets.size());
            ExecutionException down = assertThrows(ExecutionException.class,
                    () -> r.get(TestChunks.key(10), m -> alloc(pool, m)).get(20, TimeUnit.SECONDS));
            assertFalse(down.getCause() instanceof AssertionError);

            redis.restart(); // empty: nothing was persisted
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) { // each of the connector's connections comes back on its own: the put may find one still down
                try {
                    r.ping().get(10, TimeUnit.SECONDS);
                    r.put(TestChunks.key(10), RemoteMetadata.forObject(stored.get(0)), stored.get(0).segment())
                            .get(10, TimeUnit.SECONDS);
                    break;
                } catch (ExecutionException e) {
                    if (System.nanoTime() > deadline) {
                        throw new AssertionError("the connector did not reconnect within 30 s", e);
                    }
                    Thread.sleep(50);
                }
            }
            MemoryObj back = await(r.get(TestChunks.key(10), m -> alloc(pool, m))).orElseThrow();
            assertSameBytes(stored.get(0), back);
            back.release();
            stored.forEach(MemoryObj::release);
        }
    }

    @Test
    void aManifestFromAWriterWithAnotherPartSizeIsRead() throws Exception {
        try (TensorMemoryAllocator pool = pool(3);
             RedisConnector writer = RedisConnector.connect(URI.create(redis.url()), RedisLayout.split(2, 1));
             RedisConnector reader = split("")) {
            CacheEngineKey key = TestChunks.key(9);
            MemoryObj obj = putOne(writer, pool, key, 5);
            assertEquals(3, keys().size(), "a manifest and two parts of 2 MiB");
            MemoryObj back = await(reader.get(key, m -> alloc(pool, m))).orElseThrow();
            assertSameBytes(obj, back);
            back.release();
            obj.release();
        }
    }

    @Test
    void layoutsAreCheckedWithMessagesThatSayWhatIsValid() {
        assertInstanceOf(RedisLayout.Single.class, RedisLayout.of("single", 4, 4));
        assertEquals(new RedisLayout.Split(8 << 20, 16), RedisLayout.of("SPLIT", 8, 16));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RedisLayout.of("striped", 4, 4)).getMessage()
                .contains("[single, split]"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RedisLayout.split(9, 4)).getMessage().contains("1..8 MiB"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RedisLayout.split(0, 4)).getMessage().contains("1..8 MiB"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RedisLayout.split(1, 0)).getMessage().contains("1..16"));
        assertEquals(4, new RedisLayout.Split(1 << 20, 1).partsOf(BYTES));
        assertEquals(1, new RedisLayout.Split(1 << 20, 1).partsOf(0));
    }
}
