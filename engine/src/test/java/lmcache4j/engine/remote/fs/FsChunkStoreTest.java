package lmcache4j.engine.remote.fs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.remote.RemoteMetadata;

class FsChunkStoreTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final String HASH_HEX = "0123456789abcdef".repeat(4);
    /** The golden key: to_string() = meta-llama/Llama-3.1-8B@1@0@0123...cdef@bfloat16. */
    private static final CacheEngineKey KEY = new CacheEngineKey("meta-llama/Llama-3.1-8B", 1, 0, ChunkHash.fromHex(HASH_HEX),
            DType.BFLOAT16);
    private static final TensorShape SMALL = TensorShape.of(2, 1, 4, 8); // 128 bytes of bf16
    /** LMCache's header for SMALL: struct.pack("iiiiiii", 128, 1, 3, 2, 1, 4, 8).hex(). */
    private static final String SMALL_HEADER = "80000000" + "01000000" + "03000000" + "02000000" + "01000000" + "04000000" + "08000000";

    @TempDir
    Path dir;
    private TensorMemoryAllocator alloc;
    private final List<MemoryObj> live = new ArrayList<>();

    @BeforeEach
    void allocator() {
        alloc = TensorMemoryAllocator.strict("fs-test", 16 << 20, 64);
    }

    @AfterEach
    void release() {
        live.forEach(MemoryObj::release);
        alloc.close();
    }

    private MemoryObj obj(TensorShape shape, DType dtype, MemoryFormat fmt, int seed) {
        MemoryObj o = alloc.allocate(shape, dtype, fmt).orElseThrow();
        live.add(o);
        for (long i = 0; i < o.byteSize(); i++) {
            o.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (seed * 31 + i));
        }
        return o;
    }

    private MemoryObj empty(RemoteMetadata m) {
        MemoryObj o = alloc.allocate(m.toShape(), m.dtype().orElse(DType.UINT8), m.format()).orElseThrow();
        live.add(o);
        o.segment().fill((byte) 0x5a);
        return o;
    }

    private static CacheEngineKey key(int i) {
        return new CacheEngineKey("org/model", 2, 1, ChunkHash.of(new byte[] {(byte) (i >> 8), (byte) i, 7}), DType.BFLOAT16,
                i % 3 == 0 ? Map.of("tenant", "t" + i) : Map.of());
    }

    private List<Path> bases(int n) {
        List<Path> bases = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            bases.add(dir.resolve("base" + i));
        }
        return bases;
    }

    // ---- naming and layout goldens ------------------------------------------------------------

    @Test
    void fileNamesAreLmcachesGolden() throws IOException {
        String keyString = "meta-llama/Llama-3.1-8B@1@0@" + HASH_HEX + "@bfloat16";
        assertEquals(keyString, KEY.toKeyString());
        FsChunkStore sep = new FsChunkStore(List.of(dir));
        // fs_connector.py _get_file_name: key.to_string().replace("/", "-SEP-") + ".data"
        assertEquals(dir.resolve("meta-llama-SEP-Llama-3.1-8B@1@0@" + HASH_HEX + "@bfloat16.data"), sep.pathFor(KEY));
        // Path.with_suffix(".tmp") replaces the final ".data" (dots in the model name stay)
        assertEquals(dir.resolve("meta-llama-SEP-Llama-3.1-8B@1@0@" + HASH_HEX + "@bfloat16.tmp"), sep.tmpPathFor(KEY));
        assertEquals(dir.resolve("meta-llama-SEP-Llama-3.1-8B@1@0@" + HASH_HEX + "@bfloat16@5.data"), sep.pathFor(KEY.layer(5)));
        // older releases: replace("/", "-")
        FsChunkStore dash = new FsChunkStore(List.of(dir), FileNaming.DASH, null);
        assertEquals(dir.resolve("meta-llama-Llama-3.1-8B@1@0@" + HASH_HEX + "@bfloat16.data"), dash.pathFor(KEY));
        // fs_connector_relative_tmp_dir: <base>/<tmp dir>/<same file name>
        FsChunkStore tmpDir = new FsChunkStore(List.of(dir), FileNaming.SEP, Path.of(".tmp"));
        assertTrue(Files.isDirectory(dir.resolve(".tmp")));
        assertEquals(dir.resolve(".tmp").resolve("meta-llama-SEP-Llama-3.1-8B@1@0@" + HASH_HEX + "@bfloat16.data"),
                tmpDir.tmpPathFor(KEY));
        assertThrows(IllegalArgumentException.class, () -> new FsChunkStore(List.of(dir), FileNaming.SEP, dir.resolve("abs")));
    }

    @Test
    void basePathIsTheHashModuloThePathCount() throws IOException {
        // int("0123456789abcdef" * 4, 16) % n for n = 2, 3, 4, 5, 7 is 1, 0, 3, 0, 6 (computed with CPython)
        int[] n = {2, 3, 4, 5, 7};
        int[] expected = {1, 0, 3, 0, 6};
        for (int i = 0; i < n.length; i++) {
            FsChunkStore store = new FsChunkStore(bases(n[i]));
            assertEquals(expected[i], store.basePathIndex(KEY), "n = " + n[i]);
            assertEquals(bases(n[i]).get(expected[i]), store.pathFor(KEY).getParent());
            assertEquals(expected[i], store.basePathIndex(KEY.layer(3)), "layers follow their chunk");
        }
        // (2^256 - 1) % n for n = 2, 3, 5, 7 is 1, 0, 0, 1
        ChunkHash ones = ChunkHash.of(HEX.parseHex("ff".repeat(32)));
        assertEquals(List.of(1, 0, 0, 1), List.of(FsChunkStore.hashModulo(ones, 2), FsChunkStore.hashModulo(ones, 3),
                FsChunkStore.hashModulo(ones, 5), FsChunkStore.hashModulo(ones, 7)));
        Random rnd = new Random(42);
        for (int t = 0; t < 2000; t++) {
            byte[] h = new byte[1 + rnd.nextInt(40)];
            rnd.nextBytes(h);
            int m = 2 + rnd.nextInt(1000);
            assertEquals(new BigInteger(1, h).mod(BigInteger.valueOf(m)).intValue(), FsChunkStore.hashModulo(ChunkHash.of(h), m));
        }
        assertEquals(0, new FsChunkStore(bases(1)).basePathIndex(KEY));
    }

    @Test
    void urlsParseLikeLmcache() {
        assertEquals(List.of(Path.of("/tmp/lmcache-fs")), FsChunkStore.parseUrl("fs://localhost:0/tmp/lmcache-fs"));
        assertEquals(List.of(Path.of("/tmp/lmcache")), FsChunkStore.parseUrl("fs:///tmp/lmcache"));
        assertEquals(List.of(Path.of("/mnt/a"), Path.of("/mnt/b")), FsChunkStore.parseUrl("fs://host:1234/mnt/a, /mnt/b?x=1"));
        for (String bad : new String[] {"redis://h:1/x", "fs://localhost:0", "fs://localhost/tmp/x", "fs://h:p/x", "fs://h:1/a,,/b"}) {
            assertThrows(IllegalArgumentException.class, () -> FsChunkStore.parseUrl(bad), bad);
        }
    }

    // ---- round trips ----------------------------------------------------------------------------

    @Test
    void putGetExistsRemoveListAcrossSeveralBasePaths() throws IOException {
        FsChunkStore store = new FsChunkStore(bases(3));
        List<CacheKey> keys = new ArrayList<>();
        Set<Integer> usedBases = new HashSet<>();
        for (int i = 0; i < 12; i++) {
            CacheKey k = i % 4 == 3 ? key(i).layer(i) : key(i);
            keys.add(k);
            assertFalse(store.exists(k));
            assertEquals(Optional.empty(), store.readMetadata(k));
            store.put(k, obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, i));
            assertTrue(store.exists(k));
            assertTrue(Files.isRegularFile(store.pathFor(k)));
            assertFalse(Files.exists(store.tmpPathFor(k)), "no temporary file is left behind");
            usedBases.add(store.basePathIndex(k));
        }
        assertEquals(3, usedBases.size(), "the keys spread over all bases");
        assertEquals(new HashSet<>(keys), new HashSet<>(store.list()));
        assertEquals(12, store.listStems().size());

        for (int i = 0; i < keys.size(); i++) {
            RemoteMetadata m = store.readMetadata(keys.get(i)).orElseThrow();
            assertEquals(new RemoteMetadata(128, MemoryFormat.KV_2LTD, Optional.of(DType.BFLOAT16), SMALL), m);
            MemoryObj dst = empty(m);
            assertTrue(store.get(keys.get(i), m, dst));
            assertArrayEquals(obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, i).segment().toArray(ValueLayout.JAVA_BYTE),
                    dst.segment().toArray(ValueLayout.JAVA_BYTE));
        }

        assertTrue(store.remove(keys.get(0)));
        assertFalse(store.remove(keys.get(0)));
        assertFalse(store.exists(keys.get(0)));
        assertFalse(store.get(keys.get(0), store.readMetadata(keys.get(1)).orElseThrow(), empty(store.readMetadata(keys.get(1)).orElseThrow())));
        assertEquals(11, store.list().size());
        assertFalse(store.list().contains(keys.get(0)));
    }

    @Test
    void putReplacesAnOlderFileAndLayerwiseShapesRoundTrip() throws IOException {
        FsChunkStore store = new FsChunkStore(bases(2));
        store.put(KEY, obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, 1));
        MemoryObj layer = obj(TensorShape.of(2, 8, 96), DType.FLOAT16, MemoryFormat.KV_2TD, 2);
        store.put(KEY, layer);
        RemoteMetadata m = store.readMetadata(KEY).orElseThrow();
        assertEquals(TensorShape.of(2, 8, 96, 0), m.shape());
        MemoryObj dst = empty(m);
        assertEquals(layer.shape(), dst.shape());
        assertTrue(store.get(KEY, m, dst));
        assertArrayEquals(layer.segment().toArray(ValueLayout.JAVA_BYTE), dst.segment().toArray(ValueLayout.JAVA_BYTE));
        assertEquals(RemoteMetadata.BYTES + layer.byteSize(), Files.size(store.pathFor(KEY)));
    }

    // ---- misses, corruption, atomicity ----------------------------------------------------------

    @Test
    void aTruncatedFileIsAMiss() throws IOException {
        FsChunkStore store = new FsChunkStore(List.of(dir));
        store.put(KEY, obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, 3));
        RemoteMetadata m = store.readMetadata(KEY).orElseThrow();
        truncate(store.pathFor(KEY), RemoteMetadata.BYTES + 100);
        assertTrue(store.exists(KEY), "exists() is a path check, as in LMCache");
        assertFalse(store.get(KEY, m, empty(m)), "short payload");
        truncate(store.pathFor(KEY), 20);
        assertEquals(Optional.empty(), store.readMetadata(KEY), "short header");
        assertFalse(store.get(KEY, m, empty(m)));
        truncate(store.pathFor(KEY), 0);
        assertEquals(Optional.empty(), store.readMetadata(KEY));
    }

    @Test
    void aChangedHeaderIsAMissAndAnOversizedDestinationIsRefused() throws IOException {
        FsChunkStore store = new FsChunkStore(List.of(dir));
        store.put(KEY, obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, 3));
        RemoteMetadata stale = new RemoteMetadata(128, MemoryFormat.KV_2LTD, Optional.of(DType.FLOAT16), SMALL);
        assertFalse(store.get(KEY, stale, empty(stale)));
        RemoteMetadata m = store.readMetadata(KEY).orElseThrow();
        MemoryObj big = obj(TensorShape.of(2, 1, 8, 8), DType.BFLOAT16, MemoryFormat.KV_2LTD, 0);
        assertThrows(IllegalArgumentException.class, () -> store.get(KEY, m, big));
    }

    @Test
    void aMalformedHeaderIsAnIoErrorNamingTheFile() throws IOException {
        FsChunkStore store = new FsChunkStore(List.of(dir));
        byte[] bad = HEX.parseHex(SMALL_HEADER.substring(0, 16) + "63000000" + SMALL_HEADER.substring(24));
        Files.write(store.pathFor(KEY), bad);
        IOException e = assertThrows(IOException.class, () -> store.readMetadata(KEY));
        assertTrue(e.getMessage().contains(store.pathFor(KEY).toString()), e.getMessage());
        assertTrue(e.getMessage().contains("unknown dtype code 99"), e.getMessage());
    }

    @Test
    void writesGoThroughTheTemporaryNameAndAStaleTemporaryFileIsInvisible() throws IOException {
        FsChunkStore store = new FsChunkStore(List.of(dir));
        // A writer that died mid-write leaves only the temporary file: readers see nothing.
        Path tmp = store.tmpPathFor(KEY);
        assertTrue(tmp.getFileName().toString().endsWith(".tmp"));
        Files.write(tmp, HEX.parseHex(SMALL_HEADER.substring(0, 20)));
        assertFalse(store.exists(KEY));
        assertEquals(Optional.empty(), store.readMetadata(KEY));
        assertEquals(List.of(), store.listStems());
        assertEquals(List.of(), store.list());
        // The next put overwrites the temporary file and publishes it by rename.
        store.put(KEY, obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, 4));
        assertFalse(Files.exists(tmp));
        assertEquals(List.of(KEY), store.list());
    }

    @Test
    void aFailedRenameDeletesTheTemporaryFileAndNamesBothFiles() throws IOException {
        FsChunkStore store = new FsChunkStore(List.of(dir));
        Path target = store.pathFor(KEY);
        Files.createDirectories(target.resolve("blocker")); // a non-empty directory cannot be replaced
        IOException e = assertThrows(IOException.class, () -> store.put(KEY, obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, 5)));
        assertTrue(e.getMessage().contains("rename") && e.getMessage().contains(store.tmpPathFor(KEY).toString())
                && e.getMessage().contains(target.toString()), e.getMessage());
        assertFalse(Files.exists(store.tmpPathFor(KEY)));
    }

    @Test
    void relativeTmpDirWrites() throws IOException {
        FsChunkStore store = new FsChunkStore(bases(2), FileNaming.SEP, Path.of("tmp"));
        store.put(KEY, obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, 6));
        assertEquals(List.of(KEY), store.list(), "the tmp subdirectory is not listed");
        assertEquals(0, Files.list(store.tmpPathFor(KEY).getParent()).count());
    }

    @Test
    void dashNamingIsNotReversible() throws IOException {
        FsChunkStore store = new FsChunkStore(List.of(dir), FileNaming.DASH, null);
        store.put(KEY, obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, 7));
        assertEquals(List.of("meta-llama-Llama-3.1-8B@1@0@" + HASH_HEX + "@bfloat16"), store.listStems());
        assertThrows(UnsupportedOperationException.class, store::list);
        assertTrue(store.exists(KEY));
    }

    @Test
    void listSkipsFilesThatAreNotKeys() throws IOException {
        FsChunkStore store = new FsChunkStore(List.of(dir));
        Files.write(dir.resolve("notes.data"), new byte[] {1});
        Files.write(dir.resolve("other.txt"), new byte[] {1});
        store.put(KEY, obj(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD, 8));
        assertEquals(List.of(KEY), store.list());
        assertEquals(Set.of("notes", KEY.toKeyString().replace("/", "-SEP-")), new HashSet<>(store.listStems()));
    }

    // ---- interoperability: a file as LMCache writes it --------------------------------------------

    @Test
    void readsAFileWrittenByLmcache() throws IOException {
        // What FSConnector.put writes for KEY: metadata.serialize() then memory_obj.byte_array.
        byte[] payload = new byte[128];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) (i * 7 + 1);
        }
        List<Path> bases = bases(3);
        FsChunkStore store = new FsChunkStore(bases);
        Path file = bases.get(0).resolve("meta-llama-SEP-Llama-3.1-8B@1@0@" + HASH_HEX + "@bfloat16.data"); // index 0 of 3
        Files.write(file, concat(HEX.parseHex(SMALL_HEADER), payload));

        assertTrue(store.exists(KEY));
        assertEquals(List.of(KEY), store.list());
        RemoteMetadata m = store.readMetadata(KEY).orElseThrow();
        assertEquals(new RemoteMetadata(128, MemoryFormat.KV_2LTD, Optional.of(DType.BFLOAT16), SMALL), m);
        MemoryObj dst = empty(m);
        assertTrue(store.get(KEY, m, dst));
        assertArrayEquals(payload, dst.segment().toArray(ValueLayout.JAVA_BYTE));

        // And what lmcache4j writes for the same object is byte-identical to it.
        MemoryObj same = alloc.allocate(SMALL, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
        live.add(same);
        same.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(payload));
        Files.delete(file);
        store.put(KEY, same);
        assertArrayEquals(concat(HEX.parseHex(SMALL_HEADER), payload), Files.readAllBytes(file));
    }

    @Test
    void readsAnLmcacheFileWhoseLengthIncludesBatchPadding() throws IOException {
        // LMCache writes len(byte_array), which for batched objects is the aligned slot (here 4096).
        byte[] header = HEX.parseHex("00100000" + SMALL_HEADER.substring(8));
        byte[] payload = new byte[4096];
        new Random(1).nextBytes(payload);
        FsChunkStore store = new FsChunkStore(List.of(dir));
        Files.write(store.pathFor(KEY), concat(header, payload));
        RemoteMetadata m = store.readMetadata(KEY).orElseThrow();
        assertEquals(4096, m.length());
        MemoryObj dst = empty(m);
        assertEquals(128, dst.byteSize());
        assertTrue(store.get(KEY, m, dst));
        assertArrayEquals(java.util.Arrays.copyOf(payload, 128), dst.segment().toArray(ValueLayout.JAVA_BYTE));
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static void truncate(Path file, long size) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(size);
        }
    }
}
