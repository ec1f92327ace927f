package lmcache4j.s3;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
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
import lmcache4j.engine.remote.RemoteConnectorSettings;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.s3.proxy.S3ProxyProcess;

/**
 * {@link S3Connector} against a real S3 API server (s3proxy over a temporary directory): LMCache's
 * object naming and raw-payload layout on disk, ranged parallel reads, LMCache's own headerless
 * objects, corrupt and foreign objects, a missing bucket, refused credentials and a stopped server.
 */
@Timeout(300)
class S3ConnectorTest {
    private static final String BUCKET = "lmcache-test";
    /** A full chunk of this test's model: [2, 2, 256, 1024] bf16 = 2 MiB. */
    private static final TensorShape FULL = TensorShape.of(2, 2, 256, 1024);
    private static final RemoteMetadata FULL_CHUNK = new RemoteMetadata(Math.toIntExact(FULL.byteSize(DType.BFLOAT16)),
            MemoryFormat.KV_2LTD, Optional.of(DType.BFLOAT16), FULL);

    private static S3ProxyProcess server;
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
        memory = HostMemoryAllocator.tensor("s3-test", 64L << 20, HostArenaOptions.DEFAULT);
        s3 = connector(Map.of());
    }

    @AfterEach
    void close() {
        s3.close();
        memory.close();
    }

    private static S3Connector connector(Map<String, Object> extra) throws IOException {
        Map<String, Object> config = new HashMap<>(S3ProxyProcess.credentials());
        config.putAll(extra);
        return S3Connector.open(server.url(BUCKET), new RemoteConnectorSettings(config, Optional.of(FULL_CHUNK)));
    }

    private static <T> T await(CompletableFuture<T> f) throws Exception {
        return f.get(60, TimeUnit.SECONDS);
    }

    private static CacheEngineKey key(long hash) {
        return new CacheEngineKey("org/model-x", 2, 1, ChunkHash.ofLong(hash), DType.BFLOAT16);
    }

    private MemoryObj chunk(TensorShape shape, int seed) {
        MemoryObj obj = memory.allocate(shape, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
        MemorySegment s = obj.segment();
        for (long i = 0; i < s.byteSize(); i += 4) {
            s.set(ValueLayout.JAVA_INT_UNALIGNED, i, (int) (i * 2654435761L) ^ seed);
        }
        return obj;
    }

    private Optional<MemoryObj> read(S3Connector c, CacheEngineKey key) throws Exception {
        return await(c.get(key, m -> memory.allocate(m.toShape(), m.dtype().orElseThrow(), m.format())));
    }

    private Path objectFile(CacheEngineKey key) {
        return server.dataDirectory().resolve(BUCKET).resolve(S3Connector.objectKey(key));
    }

    private static byte[] bytes(MemoryObj obj) {
        return obj.segment().toArray(ValueLayout.JAVA_BYTE);
    }

    @Test
    void aChunkIsOneObjectHoldingItsPayloadAloneUnderLmcachesFlattenedKey() throws Exception {
        CacheEngineKey key = key(0xabc123L);
        MemoryObj obj = chunk(FULL, 1);
        try {
            assertFalse(await(s3.exists(key)));
            await(s3.put(key, RemoteMetadata.forObject(obj), obj.segment()));
            assertTrue(await(s3.exists(key)));
            assertEquals("org_model-x@2@1@abc123@bfloat16", S3Connector.objectKey(key), "LMCache: '/' becomes '_'");
            assertArrayEquals(bytes(obj), Files.readAllBytes(objectFile(key)), "the object is the payload, no header (LMCache's layout)");
            MemoryObj back = read(s3, key).orElseThrow();
            try {
                assertArrayEquals(bytes(obj), bytes(back));
                assertEquals(FULL, back.shape());
            } finally {
                back.release();
            }
            assertTrue(await(s3.remove(key)));
            assertFalse(await(s3.exists(key)));
            assertFalse(await(s3.remove(key)));
            assertTrue(read(s3, key).isEmpty(), "an absent object is a miss");
        } finally {
            obj.release();
        }
    }

    @Test
    void aLargeObjectIsReadInRangedPartsEveryByteInPlace() throws Exception {
        S3Connector parts = connector(Map.of("s3_part_size", (long) (300 << 10))); // 2 MiB in 7 parts, the last short
        try {
            CacheEngineKey key = key(0x5eedL);
            MemoryObj obj = chunk(FULL, 7);
            try {
                await(parts.put(key, RemoteMetadata.forObject(obj), obj.segment()));
                MemoryObj back = read(parts, key).orElseThrow();
                try {
                    assertArrayEquals(bytes(obj), bytes(back));
                } finally {
                    back.release();
                }
            } finally {
                obj.release();
            }
        } finally {
            parts.close();
        }
    }

    @Test
    void aPartialLastChunkReadsBackWithItsOwnShapeFromLmcache4jsHeader() throws Exception {
        TensorShape partial = TensorShape.of(2, 2, 100, 1024);
        CacheEngineKey key = key(0x77L);
        MemoryObj obj = chunk(partial, 3);
        try {
            await(s3.put(key, RemoteMetadata.forObject(obj), obj.segment()));
            MemoryObj back = read(s3, key).orElseThrow();
            try {
                assertEquals(partial, back.shape());
                assertArrayEquals(bytes(obj), bytes(back));
            } finally {
                back.release();
            }
        } finally {
            obj.release();
        }
    }

    @Test
    void lmcachesHeaderlessObjectIsReadAsAFullChunkAndAnyOtherSizeIsAForeignMiss() throws Exception {
        CacheEngineKey lmcache = key(0x1111L);
        byte[] payload = new byte[FULL_CHUNK.length()];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) (i * 31 + 7);
        }
        Files.write(objectFile(lmcache), payload); // what LMCache's PUT leaves: the bytes, no metadata
        assertTrue(await(s3.exists(lmcache)));
        MemoryObj back = read(s3, lmcache).orElseThrow();
        try {
            assertArrayEquals(payload, bytes(back));
            assertEquals(FULL, back.shape());
        } finally {
            back.release();
        }
        CacheEngineKey other = key(0x2222L);
        Files.write(objectFile(other), new byte[12345]); // another shape under the key
        assertFalse(await(s3.exists(other)), "an object of another shape is no chunk of ours");
        assertTrue(read(s3, other).isEmpty());
        assertEquals(1, s3.foreignObjects());
        assertEquals(0, memory.stats().liveObjects(), "nothing allocated for it stays");
    }

    @Test
    void anAlteredObjectFailsItsCrcIsAMissCountedAndDeleted() throws Exception {
        CacheEngineKey key = key(0xbadL);
        MemoryObj obj = chunk(FULL, 9);
        try {
            await(s3.put(key, RemoteMetadata.forObject(obj), obj.segment()));
        } finally {
            obj.release();
        }
        Path file = objectFile(key);
        byte[] stored = Files.readAllBytes(file);
        stored[stored.length / 2] ^= 0x10;
        Files.write(file, stored); // same size, one bit flipped; the user metadata stays
        assertTrue(read(s3, key).isEmpty(), "a corrupt object is never served");
        assertEquals(1, s3.corruptObjects());
        for (int i = 0; i < 100 && await(s3.exists(key)); i++) {
            Thread.sleep(50);
        }
        assertFalse(await(s3.exists(key)), "and it is deleted");
        assertEquals(0, memory.stats().liveObjects());
    }

    @Test
    void aMissingBucketOrRefusedCredentialsAreStartErrorsNamingTheSetting() {
        IllegalArgumentException noBucket = assertThrows(IllegalArgumentException.class, () -> S3Connector.open(
                server.url("no-such-bucket"), new RemoteConnectorSettings(S3ProxyProcess.credentials(), Optional.empty())));
        assertTrue(noBucket.getMessage().contains("bucket 'no-such-bucket' does not exist"), noBucket.getMessage());
        IOException refused = assertThrows(IOException.class, () -> S3Connector.open(server.url(BUCKET),
                new RemoteConnectorSettings(Map.of("aws_access_key_id", "intruder", "aws_secret_access_key", "not-the-secret"),
                        Optional.empty())));
        assertTrue(refused.getMessage().contains("refused the credentials") && refused.getMessage().contains("aws_access_key_id"),
                refused.getMessage());
        assertFalse(refused.getMessage().contains("not-the-secret"), "credentials are never printed");
    }

    @Test
    void aStoppedServerFailsOperationsAndTheConnectorWorksAgainWhenItIsBack() throws Exception {
        CacheEngineKey key = key(0xd0e5L);
        MemoryObj obj = chunk(FULL, 11);
        try {
            await(s3.put(key, RemoteMetadata.forObject(obj), obj.segment()));
            long live = memory.stats().liveObjects();
            server.stop();
            ExecutionException down = assertThrows(ExecutionException.class, () -> await(s3.ping()));
            assertFalse(down.getCause() instanceof AssertionError);
            assertThrows(ExecutionException.class, () -> read(s3, key));
            assertEquals(live, memory.stats().liveObjects(), "a failed read keeps nothing");
            server.restart();
            MemoryObj back = read(s3, key).orElseThrow();
            try {
                assertArrayEquals(bytes(obj), bytes(back));
            } finally {
                back.release();
            }
        } finally {
            obj.release();
            if (!server.running()) {
                server.restart();
            }
        }
    }

    @Test
    void urlFormsNameTheBucketAndEndpointAsLmcacheSendsThem() {
        S3Location aws = S3Location.parse("s3://my-bucket.s3.us-west-2.amazonaws.com");
        assertEquals("my-bucket", aws.bucket());
        assertEquals(Optional.of("us-west-2"), aws.region());
        assertTrue(aws.endpoint().isEmpty());
        S3Location bare = S3Location.parse("s3://my-bucket");
        assertEquals("my-bucket", bare.bucket());
        assertTrue(bare.endpoint().isEmpty());
        S3Location compatible = S3Location.parse("s3://test-127.cwlota.com");
        assertEquals("test-127", compatible.bucket());
        assertEquals(Optional.of("cwlota.com"), compatible.endpoint());
        assertFalse(compatible.pathStyle(), "LMCache's Host: BUCKET.ENDPOINT");
        S3Location local = S3Location.parse("s3://127.0.0.1:9000/bench?disable_tls=true");
        assertEquals("bench", local.bucket());
        assertTrue(local.pathStyle());
        assertEquals(Optional.of(true), local.disableTls());
        assertEquals("http://127.0.0.1:9000", local.endpointUri(false).orElseThrow().toString());
        for (String bad : new String[] {"s3://akid:hunter2@bucket", "s3://127.0.0.1:9000", "s3://h:1/a/b", "s3://B_ad",
                "s3://h:1/b?tls=no", "s3://x.s3express-usw2-az1.us-west-2.amazonaws.com"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> S3Location.parse(bad), bad);
            assertFalse(e.getMessage().contains("hunter2"), e.getMessage());
        }
        assertInstanceOf(IllegalArgumentException.class, assertThrows(IllegalArgumentException.class,
                () -> S3Settings.of(Map.of("aws_access_key_id", "only-the-id"), local)));
    }
}
