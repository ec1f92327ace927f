package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.storage.TestChunks;

/** Round trips in both I/O modes, the header layout, and recovery after a clean restart. */
class ChunkFilesTest {
    @TempDir
    Path dir;

    @RegisterExtension
    final TrackedChunks chunks = new TrackedChunks(64L << 20);

    private MemoryObj chunk(TensorShape shape, long seed) {
        return chunks.chunk(shape, seed);
    }

    private MemoryObj empty(TensorShape shape, DType dtype, MemoryFormat format) {
        MemoryObj obj = chunks.allocate(shape, dtype, format);
        obj.segment().fill((byte) 0x5A);
        return obj;
    }

    @Test
    void buffered_mode_is_used_when_o_direct_is_not_requested() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        assertFalse(files.directIo());
        assertTrue(files.ioDescription().contains("not requested"), files.ioDescription());
        roundTrip(files);
    }

    @Test
    void o_direct_is_used_exactly_when_the_file_system_supports_it() throws Exception {
        boolean supported = DiskTestChunks.oDirectWorks(dir);
        ChunkFiles files = new ChunkFiles(dir, true, true);
        assertEquals(supported, files.directIo(), files.ioDescription());
        System.out.println("O_DIRECT in " + dir + ": " + files.ioDescription());
        roundTrip(files);
    }

    /** Writes an odd-sized, an aligned and a tiny chunk and reads each back byte for byte. */
    private void roundTrip(ChunkFiles files) throws Exception {
        TensorShape[] shapes = {DiskTestChunks.ODD, DiskTestChunks.ALIGNED, DiskTestChunks.TINY};
        for (int i = 0; i < shapes.length; i++) {
            CacheEngineKey key = TestChunks.key(i);
            MemoryObj src = chunk(shapes[i], 100 + i);
            long bytes = files.write(key, src);
            Path path = files.pathFor(key);
            assertEquals(Files.size(path), bytes);
            assertEquals(0, bytes % 4096, "file sizes are 4 KiB multiples");
            assertEquals(4096 + ((src.byteSize() + 4095) & -4096L), bytes);

            ChunkFileHeader h = files.readHeader(path).orElseThrow();
            assertEquals(key.toKeyString(), h.keyString());
            assertEquals(MemoryFormat.KV_2LTD, h.format());
            assertEquals(DType.BFLOAT16, h.dtype());
            assertEquals(shapes[i], h.shape());
            assertEquals(src.byteSize(), h.payloadLength());
            assertEquals(bytes, h.fileBytes());

            MemoryObj dst = empty(shapes[i], DType.BFLOAT16, MemoryFormat.KV_2LTD);
            files.readPayload(path, h, dst);
            assertEquals(-1, DiskTestChunks.mismatch(dst.segment(), dst.byteSize(), 100 + i));
        }
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(List.of(), s.filter(p -> p.getFileName().toString().contains(".tmp-")).toList(), "no temp file left");
        }
    }

    @Test
    void files_written_in_one_mode_read_back_in_the_other() throws Exception {
        ChunkFiles direct = new ChunkFiles(dir, true, false);
        ChunkFiles buffered = new ChunkFiles(dir, false, false);
        MemoryObj a = chunk(DiskTestChunks.ODD, 1);
        MemoryObj b = chunk(DiskTestChunks.ODD, 2);
        direct.write(TestChunks.key(1), a);
        buffered.write(TestChunks.key(2), b);
        assertEquals(Files.readAllBytes(direct.pathFor(TestChunks.key(1))).length,
                Files.readAllBytes(buffered.pathFor(TestChunks.key(2))).length);

        MemoryObj dst = empty(DiskTestChunks.ODD, DType.BFLOAT16, MemoryFormat.KV_2LTD);
        Path p1 = direct.pathFor(TestChunks.key(1));
        buffered.readPayload(p1, buffered.readHeader(p1).orElseThrow(), dst);
        assertEquals(-1, DiskTestChunks.mismatch(dst.segment(), dst.byteSize(), 1));
        Path p2 = buffered.pathFor(TestChunks.key(2));
        direct.readPayload(p2, direct.readHeader(p2).orElseThrow(), dst);
        assertEquals(-1, DiskTestChunks.mismatch(dst.segment(), dst.byteSize(), 2));
    }

    @Test
    void metadata_of_every_dtype_and_format_round_trips() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, true, false);
        int i = 0;
        for (DType dtype : DType.values()) {
            for (MemoryFormat format : new MemoryFormat[] {MemoryFormat.KV_2LTD, MemoryFormat.KV_T2D, MemoryFormat.KV_2TD,
                    MemoryFormat.KV_MLA_FMT}) {
                TensorShape shape = switch (format) {
                    case KV_T2D -> TensorShape.of(7, 2, 3);
                    case KV_2TD -> TensorShape.of(2, 7, 3);
                    case KV_MLA_FMT -> TensorShape.of(1, 2, 7, 3);
                    default -> TensorShape.of(2, 2, 7, 3);
                };
                MemoryObj obj = empty(shape, dtype, format);
                DiskTestChunks.fill(obj.segment(), i);
                CacheEngineKey key = new CacheEngineKey("m", 1, 0, ChunkHash.of(new byte[] {(byte) i}), dtype);
                files.write(key, obj);
                ChunkFileHeader h = files.readHeader(files.pathFor(key)).orElseThrow();
                assertEquals(new ChunkFileHeader(key.toKeyString(), format, dtype, shape, obj.byteSize(), h.crc32c()), h);
                MemoryObj back = empty(shape, dtype, format);
                files.readPayload(files.pathFor(key), h, back);
                assertEquals(-1, DiskTestChunks.mismatch(back.segment(), back.byteSize(), i));
                i++;
            }
        }
    }

    @Test
    void header_layout_is_the_documented_one() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        CacheEngineKey key = TestChunks.key(7);
        MemoryObj obj = chunk(DiskTestChunks.ODD, 7);
        files.write(key, obj);
        byte[] file = Files.readAllBytes(files.pathFor(key));
        MemorySegment s = MemorySegment.ofArray(file);
        var INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        var LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        assertEquals("LMC4JKV\0", new String(file, 0, 8, StandardCharsets.US_ASCII));
        assertEquals(1, s.get(INT, 8), "version");
        assertEquals(4096, s.get(INT, 12), "header length");
        assertEquals(MemoryFormat.KV_2LTD.code(), s.get(INT, 16));
        assertEquals(3, s.get(INT, 20), "bf16 has LMCache's metadata code 3");
        assertEquals(4, s.get(INT, 24), "rank");
        assertEquals(509, s.get(INT, 28 + 12));
        assertEquals(obj.byteSize(), s.get(LONG, 44));
        byte[] keyBytes = key.toKeyString().getBytes(StandardCharsets.UTF_8);
        assertEquals(keyBytes.length, s.get(INT, 56));
        assertEquals(key.toKeyString(), new String(file, 60, keyBytes.length, StandardCharsets.UTF_8));
        // the payload starts at 4096 and the padding after it is zero
        MemorySegment payload = s.asSlice(4096, obj.byteSize());
        assertEquals(-1, DiskTestChunks.mismatch(payload, obj.byteSize(), 7));
        for (long off = 4096 + obj.byteSize(); off < file.length; off++) {
            assertEquals(0, file[(int) off]);
        }
    }

    @Test
    void a_rewrite_replaces_the_file_atomically() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, true, true);
        CacheEngineKey key = TestChunks.key(3);
        files.write(key, chunk(DiskTestChunks.ODD, 1));
        files.write(key, chunk(DiskTestChunks.ODD, 2));
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(List.of(files.pathFor(key)),
                    s.filter(p -> !p.getFileName().toString().equals(ChunkDirectoryMarker.NAME)).toList());
        }
        MemoryObj dst = empty(DiskTestChunks.ODD, DType.BFLOAT16, MemoryFormat.KV_2LTD);
        Path p = files.pathFor(key);
        files.readPayload(p, files.readHeader(p).orElseThrow(), dst);
        assertEquals(-1, DiskTestChunks.mismatch(dst.segment(), dst.byteSize(), 2));
    }

    @Test
    void a_restart_recovers_every_chunk_with_identical_bytes() throws Exception {
        Map<CacheKey, Integer> written = new LinkedHashMap<>();
        ChunkFiles before = new ChunkFiles(dir, true, true);
        List<CacheKey> keys = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            keys.add(TestChunks.key(i));
        }
        keys.add(TestChunks.key(8).layer(3));
        keys.add(new CacheEngineKey("meta-llama/Llama-3.1-8B~x", 2, 1, ChunkHash.of(new byte[] {9}), DType.BFLOAT16,
                Map.of("user", "alice/bob")));
        for (int i = 0; i < keys.size(); i++) {
            before.write(keys.get(i), chunk(i % 2 == 0 ? DiskTestChunks.ODD : DiskTestChunks.ALIGNED, i));
            written.put(keys.get(i), i);
        }
        Path sub = Files.createDirectories(dir.resolve("subdir"));
        Files.writeString(sub.resolve("kept.txt"), "not ours, but in a subdirectory");

        ChunkFiles after = new ChunkFiles(dir, true, true);
        RecoveryReport report = after.recover();
        assertEquals(0, report.removedPartial());
        assertEquals(0, report.removedCorrupt());
        assertEquals(1, report.foreign(), "the subdirectory, left alone");
        assertEquals(keys.size(), report.chunks().size());
        Map<CacheKey, RecoveredChunk> found = new HashMap<>();
        report.chunks().forEach(c -> found.put(c.key(), c));
        assertEquals(written.keySet(), found.keySet());
        for (Map.Entry<CacheKey, Integer> e : written.entrySet()) {
            RecoveredChunk c = found.get(e.getKey());
            assertEquals(after.pathFor(e.getKey()), c.path());
            assertEquals(Files.size(c.path()), c.fileBytes());
            MemoryObj dst = empty(c.header().shape(), c.header().dtype(), c.header().format());
            after.readPayload(c.path(), c.header(), dst);
            assertEquals(-1, DiskTestChunks.mismatch(dst.segment(), dst.byteSize(), e.getValue()), e.getKey().toString());
        }
        assertTrue(Files.exists(sub.resolve("kept.txt")), "subdirectories are left alone");
        assertEquals(report.totalBytes(), report.chunks().stream().mapToLong(RecoveredChunk::fileBytes).sum());
    }

    @Test
    void delete_removes_the_file_and_tolerates_a_missing_one() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        CacheEngineKey key = TestChunks.key(1);
        files.write(key, chunk(DiskTestChunks.TINY, 1));
        files.delete(files.pathFor(key));
        assertFalse(Files.exists(files.pathFor(key)));
        files.delete(files.pathFor(key));
        assertTrue(files.recover().chunks().isEmpty());
    }

    @Test
    void payload_and_padding_are_written_exactly_once_per_block() throws Exception {
        // The file is header + payload padded with zeros: reading it raw gives the object's bytes.
        ChunkFiles files = new ChunkFiles(dir, true, false);
        MemoryObj obj = chunk(DiskTestChunks.TINY, 4);
        files.write(TestChunks.key(4), obj);
        try (FileChannel ch = FileChannel.open(files.pathFor(TestChunks.key(4)), StandardOpenOption.READ)) {
            assertEquals(8192, ch.size());
            var bb = java.nio.ByteBuffer.allocate(120);
            ch.read(bb, 4096);
            assertEquals(-1, DiskTestChunks.mismatch(MemorySegment.ofArray(bb.array()), 120, 4));
        }
    }
}
