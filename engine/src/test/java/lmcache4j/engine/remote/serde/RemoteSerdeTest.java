package lmcache4j.engine.remote.serde;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.RemoteBackends;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import org.junit.jupiter.api.Test;

/** The remote serdes through a RemoteBackend over an in-memory connector. */
class RemoteSerdeTest {

    /** Stores copies of what is put; entries can be read and rewritten by tests. */
    static final class MapConnector implements RemoteConnector {
        record Entry(RemoteMetadata metadata, byte[] payload) {
        }

        final Map<CacheKey, Entry> entries = new ConcurrentHashMap<>();

        @Override
        public String url() {
            return "map://";
        }

        @Override
        public CompletableFuture<Boolean> exists(CacheKey key) {
            return CompletableFuture.completedFuture(entries.containsKey(key));
        }

        @Override
        public CompletableFuture<Void> put(CacheKey key, RemoteMetadata metadata, MemorySegment payload) {
            assertEquals(metadata.length(), payload.byteSize());
            entries.put(key, new Entry(metadata, payload.toArray(ValueLayout.JAVA_BYTE)));
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Optional<MemoryObj>> get(CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
            Entry e = entries.get(key);
            if (e == null) {
                return CompletableFuture.completedFuture(Optional.empty());
            }
            Optional<MemoryObj> obj = allocate.apply(e.metadata());
            obj.ifPresent(o -> MemorySegment.copy(MemorySegment.ofArray(e.payload()), 0, o.segment(), 0, e.payload().length));
            return CompletableFuture.completedFuture(obj);
        }

        @Override
        public CompletableFuture<Boolean> remove(CacheKey key) {
            return CompletableFuture.completedFuture(entries.remove(key) != null);
        }

        @Override
        public CompletableFuture<Void> ping() {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close() {
        }
    }

    private static RemoteBackend backend(MapConnector map, LocalCpuBackend cpu, String serde) {
        return new RemoteBackend(map, cpu, 2, 3600, 1, false, serde);
    }

    /** A chunk of bf16 values with some structure (like KV: small exponents, varied mantissas). */
    private static MemoryObj kvChunk(LocalCpuBackend cpu, int seed) {
        MemoryObj obj = TestChunks.chunk(cpu, 0, AllocationMode.NO_EVICTION).orElseThrow();
        MemorySegment s = obj.segment();
        long x = seed * 0x9E3779B97F4A7C15L + 1;
        for (long i = 0; i < s.byteSize() / 2; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            // sign, exponent in a narrow band, random mantissa: bf16 near [-2, 2]
            short v = (short) (((x >>> 60) & 1) << 15 | (0x3E + ((x >>> 40) & 1)) << 7 | (x & 0x7F));
            s.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i, v);
        }
        return obj;
    }

    private static MemoryObj roundTrip(MapConnector map, RemoteBackend remote, MemoryObj obj, int key) throws Exception {
        remote.batchedSubmitPut(List.of(TestChunks.key(key)), List.of(obj));
        remote.awaitPuts();
        return remote.getBlocking(TestChunks.key(key)).orElseThrow(() -> new AssertionError("miss"));
    }

    @Test
    void realChunksRoundTripThroughEverySerde() throws Exception {
        for (String serde : List.of("naive", "lz4", "zstd")) {
            MapConnector map = new MapConnector();
            try (LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1); RemoteBackend remote = backend(map, cpu, serde)) {
                MemoryObj obj = kvChunk(cpu, 7);
                MemoryObj back = roundTrip(map, remote, obj, 1);
                assertEquals(-1, obj.segment().mismatch(back.segment()), serde + ": bytes identical after the round trip");
                assertEquals(obj.shape(), back.shape());
                assertEquals(obj.dtype(), back.dtype());
                assertEquals(obj.format(), back.format());
                RemoteMetadata stored = map.entries.get(TestChunks.key(1)).metadata();
                assertEquals(serde.equals("naive") ? MemoryFormat.KV_2LTD : MemoryFormat.BINARY_BUFFER, stored.format(), serde);
                RemoteBackend.Stats st = remote.stats();
                assertEquals(serde, st.serde());
                assertEquals(1, st.puts());
                assertEquals(1, st.gets());
                if (!serde.equals("naive")) {
                    assertEquals(TestChunks.CHUNK_BYTES, st.rawBytes());
                    assertEquals(stored.length(), st.compressedBytes());
                    assertEquals(TestChunks.CHUNK_BYTES, st.decompressedBytes());
                    assertTrue(st.compressNanos() > 0 && st.decompressNanos() > 0);
                    System.out.printf("%s on synthetic bf16 KV: %d -> %d bytes (ratio %.3f), compress %d us, decompress %d us%n",
                            serde, st.rawBytes(), st.compressedBytes(), st.rawBytes() / (double) st.compressedBytes(),
                            st.compressNanos() / 1000, st.decompressNanos() / 1000);
                }
                back.release();
                obj.release();
            }
        }
    }

    @Test
    void zeroFilledChunksShrinkAndTheCountersMove() throws Exception {
        for (String serde : List.of("lz4", "zstd")) {
            MapConnector map = new MapConnector();
            try (LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1); RemoteBackend remote = backend(map, cpu, serde)) {
                MemoryObj obj = TestChunks.chunk(cpu, 0, AllocationMode.NO_EVICTION).orElseThrow();
                MemoryObj back = roundTrip(map, remote, obj, 2);
                assertEquals(-1, obj.segment().mismatch(back.segment()));
                RemoteBackend.Stats st = remote.stats();
                assertTrue(st.compressedBytes() < TestChunks.CHUNK_BYTES / 50, serde + " stored " + st.compressedBytes());
                assertEquals(st.compressedBytes(), st.putBytes(), "the tier counts the bytes it sent");
                assertEquals(TestChunks.CHUNK_BYTES - st.compressedBytes(), st.bytesSaved());
                assertEquals(0, st.corruptEntries());
                back.release();
                obj.release();
            }
        }
    }

    @Test
    void aCorruptPayloadIsAMissAndLeaksNothing() throws Exception {
        MapConnector map = new MapConnector();
        try (LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1); RemoteBackend remote = backend(map, cpu, "lz4")) {
            MemoryObj obj = kvChunk(cpu, 3);
            remote.batchedSubmitPut(List.of(TestChunks.key(5)), List.of(obj));
            remote.awaitPuts();
            obj.release();
            MapConnector.Entry good = map.entries.get(TestChunks.key(5));
            int n = good.payload().length;
            int corrupt = 0;
            // a flipped byte inside the compressed data, a truncated stream, a bad inner header, a wrong checksum
            byte[] flipped = good.payload().clone();
            flipped[n / 2] ^= 0x5A;
            byte[] badHeader = good.payload().clone();
            badHeader[1 + 4] = 99; // inner format code
            byte[] badCrc = good.payload().clone();
            badCrc[1 + RemoteMetadata.BYTES] ^= 1;
            byte[] truncated = java.util.Arrays.copyOf(good.payload(), n - 100);
            for (byte[] payload : List.of(flipped, badHeader, badCrc, truncated)) {
                RemoteMetadata outer = new RemoteMetadata(payload.length, MemoryFormat.BINARY_BUFFER, Optional.empty(),
                        lmcache4j.allocator.TensorShape.of(payload.length, 0, 0, 0));
                map.entries.put(TestChunks.key(5), new MapConnector.Entry(outer, payload));
                assertTrue(remote.getBlocking(TestChunks.key(5)).isEmpty(), "a corrupt entry is a miss");
                corrupt++;
                assertEquals(corrupt, remote.stats().corruptEntries());
            }
            assertEquals(0, remote.stats().gets());
            // nothing leaked: every full chunk can still be allocated
            List<MemoryObj> all = new java.util.ArrayList<>();
            for (int i = 0; i < 8; i++) {
                all.add(TestChunks.chunk(cpu, i, AllocationMode.NO_EVICTION).orElseThrow(() -> new AssertionError("leaked memory")));
            }
            all.forEach(MemoryObj::release);
        }
    }

    /** Naive, except that reading throws: a serde bug must not leak the bytes the remote sent. */
    private static final class ThrowingOnReadSerde implements RemoteSerde {
        @Override
        public String name() {
            return "naive";
        }

        @Override
        public Serialized serialize(MemoryObj obj) {
            return NaiveSerde.INSTANCE.serialize(obj);
        }

        @Override
        public Optional<MemoryObj> deserialize(MemoryObj stored, MemoryProvider memory) {
            throw new IllegalStateException("serde bug");
        }

        @Override
        public Counters counters() {
            return Counters.NONE;
        }
    }

    @Test
    void aSerdeThatThrowsOnReadIsACountedMissThatReleasesTheReadObject() throws Exception {
        MapConnector map = new MapConnector();
        try (LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
             RemoteBackend remote = RemoteBackends.withSerde(map, cpu, new ThrowingOnReadSerde())) {
            MemoryObj obj = kvChunk(cpu, 5);
            remote.batchedSubmitPut(List.of(TestChunks.key(6)), List.of(obj));
            remote.awaitPuts();
            obj.release();
            for (int i = 0; i < 20; i++) { // more reads than the tier has chunks: a leak would run it dry
                assertTrue(remote.getBlocking(TestChunks.key(6)).isEmpty(), "a failed read is a miss");
            }
            assertEquals(20, remote.stats().failures());
            assertEquals(0, remote.stats().gets());
            List<MemoryObj> all = new java.util.ArrayList<>();
            for (int i = 0; i < 8; i++) {
                all.add(TestChunks.chunk(cpu, i, AllocationMode.NO_EVICTION).orElseThrow(() -> new AssertionError("leaked memory")));
            }
            all.forEach(MemoryObj::release);
        }
    }

    @Test
    void naiveEntriesAreServedWhenACompressingSerdeIsConfigured() throws Exception {
        MapConnector map = new MapConnector();
        try (LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1)) {
            MemoryObj obj = kvChunk(cpu, 11);
            try (RemoteBackend naive = backend(map, cpu, "naive")) {
                naive.batchedSubmitPut(List.of(TestChunks.key(9)), List.of(obj));
                naive.awaitPuts();
            }
            try (RemoteBackend lz4 = backend(map, cpu, "lz4")) {
                MemoryObj back = lz4.getBlocking(TestChunks.key(9)).orElseThrow();
                assertEquals(MemoryFormat.KV_2LTD, back.format());
                assertEquals(-1, obj.segment().mismatch(back.segment()));
                back.release();
                // and a zstd entry is read by an lz4 reader too
                lz4.close();
            }
            try (RemoteBackend zstd = backend(map, cpu, "zstd"); RemoteBackend lz4 = backend(map, cpu, "lz4")) {
                zstd.batchedSubmitPut(List.of(TestChunks.key(10)), List.of(obj));
                zstd.awaitPuts();
                MemoryObj back = lz4.getBlocking(TestChunks.key(10)).orElseThrow();
                assertEquals(-1, obj.segment().mismatch(back.segment()));
                back.release();
            }
            // Switching back to naive neither orphans compressed entries nor serves them raw.
            try (RemoteBackend naive = backend(map, cpu, "naive")) {
                MemoryObj back = naive.getBlocking(TestChunks.key(10)).orElseThrow();
                assertEquals(MemoryFormat.KV_2LTD, back.format());
                assertEquals(-1, obj.segment().mismatch(back.segment()));
                back.release();
            }
            obj.release();
        }
    }

    @Test
    void unknownNamesAreRefused() {
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> RemoteSerde.forName("snappy"));
        assertEquals("lz4", RemoteSerde.forName("lz4").name());
    }
}
