package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.TestPrerequisites;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.storage.TestChunks;

/** Damaged, truncated, foreign and misplaced files; an unwritable directory; a full disk. (Attacks: ChunkDirectoryOwnershipTest.) */
class ChunkFilesFaultTest {
    @TempDir
    Path dir;

    @RegisterExtension
    final TrackedChunks chunks = new TrackedChunks(16L << 20);

    private MemoryObj chunk(long seed) {
        return chunks.chunk(DiskTestChunks.ODD, seed);
    }

    private MemoryObj empty() {
        return chunks.allocate(DiskTestChunks.ODD, DType.BFLOAT16, MemoryFormat.KV_2LTD);
    }

    private static void flipByte(Path file, long offset) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, offset);
            b.put(0, (byte) (b.get(0) ^ 0x10)).rewind();
            ch.write(b, offset);
        }
    }

    private static void truncate(Path file, long size) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(size);
        }
    }

    @ParameterizedTest(name = "direct={0}")
    @ValueSource(booleans = {false, true})
    void a_flipped_payload_byte_is_a_corrupt_chunk_on_read(boolean direct) throws Exception {
        ChunkFiles files = new ChunkFiles(dir, direct, false);
        CacheEngineKey body = TestChunks.key(1);
        CacheEngineKey tail = TestChunks.key(2);
        files.write(body, chunk(1));
        files.write(tail, chunk(2));
        ChunkFileHeader hb = files.readHeader(files.pathFor(body)).orElseThrow();
        ChunkFileHeader ht = files.readHeader(files.pathFor(tail)).orElseThrow();
        flipByte(files.pathFor(body), 4096 + 12345);
        flipByte(files.pathFor(tail), 4096 + hb.payloadLength() - 1); // the last byte: in the bounce-buffered tail

        assertTrue(files.readHeader(files.pathFor(body)).isPresent(), "the header is intact");
        CorruptChunkException e = assertThrows(CorruptChunkException.class,
                () -> files.readPayload(files.pathFor(body), hb, empty()));
        assertEquals(files.pathFor(body), e.file());
        assertTrue(e.getMessage().contains("CRC32C mismatch") && e.getMessage().contains(files.pathFor(body).toString()),
                e.getMessage());
        assertThrows(CorruptChunkException.class, () -> files.readPayload(files.pathFor(tail), ht, empty()));
        // recovery does not checksum payloads: such files are kept and caught on read
        assertEquals(2, new ChunkFiles(dir, direct, false).recover().chunks().size());
    }

    @Test
    void a_flipped_header_byte_makes_the_file_invalid_and_recovery_removes_it() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, true, false);
        files.write(TestChunks.key(1), chunk(1));
        Path p = files.pathFor(TestChunks.key(1));
        ChunkFileHeader h = files.readHeader(p).orElseThrow();
        flipByte(p, 30); // a dimension
        assertTrue(files.readHeader(p).isEmpty());
        CorruptChunkException e = assertThrows(CorruptChunkException.class, () -> files.readPayload(p, h, empty()));
        assertTrue(e.getMessage().contains("header CRC32C mismatch"), e.getMessage());
        RecoveryReport r = files.recover();
        assertEquals(List.of(), r.chunks());
        assertEquals(1, r.removedCorrupt());
        assertFalse(Files.exists(p));
    }

    @ParameterizedTest(name = "truncated to {0} bytes")
    @ValueSource(longs = {0, 100, 4096, 4096 + 8192, 4096 + 1050888})
    void a_truncated_file_is_corrupt_on_read_and_removed_at_recovery(long size) throws Exception {
        ChunkFiles files = new ChunkFiles(dir, true, false);
        files.write(TestChunks.key(1), chunk(1));
        files.write(TestChunks.key(2), chunk(2));
        Path p = files.pathFor(TestChunks.key(1));
        ChunkFileHeader h = files.readHeader(p).orElseThrow();
        truncate(p, size);
        assertThrows(CorruptChunkException.class, () -> files.readPayload(p, h, empty()));

        RecoveryReport r = new ChunkFiles(dir, true, false).recover();
        assertEquals(1, r.chunks().size());
        assertEquals(TestChunks.key(2), r.chunks().getFirst().key());
        // an empty file has no magic: it is not recognisably ours, so it is foreign and left alone
        assertEquals(size == 0 ? 0 : 1, r.removedCorrupt());
        assertEquals(size == 0 ? 1 : 0, r.foreign());
        assertEquals(size == 0, Files.exists(p));
    }

    @Test
    void foreign_entries_are_left_alone_and_counted() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunk(1));
        Files.writeString(dir.resolve("notes.txt"), "hello");
        Files.write(dir.resolve("imposter.lmc"), new byte[8192]);
        Files.writeString(dir.resolve("model@1@0@abc@half.pt"), "an LMCache file");
        Files.createSymbolicLink(dir.resolve("link.lmc"), dir.resolve("notes.txt"));
        Path sub = Files.createDirectory(dir.resolve("sub.lmc"));

        RecoveryReport r = files.recover();
        assertEquals(1, r.chunks().size());
        assertEquals(5, r.foreign());
        assertEquals(0, r.removedCorrupt());
        assertEquals(0, r.removedPartial());
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(7, s.count(), "the chunk, the marker and the five foreign entries");
        }
        assertTrue(Files.isDirectory(sub));
        assertEquals(5, r.foreignExamples().size());
        String summary = r.foreignSummary();
        assertTrue(summary.startsWith("5 entries that are not lmcache4j chunk files were left alone (") && summary.contains("notes.txt")
                && summary.contains("link.lmc") && summary.contains("sub.lmc"), summary);
    }

    @Test
    void temp_files_of_unfinished_writes_are_removed_as_partial() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunk(1));
        Path done = files.pathFor(TestChunks.key(1));
        Files.copy(done, dir.resolve(done.getFileName() + ".tmp-123-4"));
        // a write killed after 777 bytes of the header
        Files.write(dir.resolve(files.pathFor(TestChunks.key(2)).getFileName() + ".tmp-99-1"),
                java.util.Arrays.copyOf(Files.readAllBytes(done), 777));
        RecoveryReport r = files.recover();
        assertEquals(1, r.chunks().size());
        assertEquals(2, r.removedPartial());
    }

    @Test
    void a_header_key_that_does_not_parse_or_match_the_name_is_corrupt() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        // a well-formed header whose key string is not a cache key
        String bad = "not-a-cache-key";
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment header = arena.allocate(4096);
            ChunkFileFormat.encode(header, bad.getBytes(StandardCharsets.UTF_8), MemoryFormat.BINARY, DType.UINT8,
                    TensorShape.of(16), 16, ChunkFileFormat.crc32c(arena.allocate(16)));
            byte[] file = java.util.Arrays.copyOf(header.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), 8192);
            Files.write(dir.resolve(ChunkFileNames.fileName(bad)), file);
        }
        assertTrue(files.readHeader(dir.resolve(ChunkFileNames.fileName(bad))).isPresent(), "the header itself is valid");
        // a valid chunk file under another key's name
        files.write(TestChunks.key(1), chunk(1));
        Files.move(files.pathFor(TestChunks.key(1)), files.pathFor(TestChunks.key(2)));

        RecoveryReport r = files.recover();
        assertEquals(List.of(), r.chunks());
        assertEquals(2, r.removedCorrupt());
    }

    @Test
    void an_unwritable_directory_fails_at_construction_naming_it() throws Exception {
        Path file = Files.writeString(dir.resolve("a-regular-file"), "x");
        Path chunkDir = file.resolve("sub");
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> new ChunkFiles(chunkDir, true, false));
        assertTrue(e.getMessage().contains(chunkDir.toString()), e.getMessage());
        UncheckedIOException e2 = assertThrows(UncheckedIOException.class, () -> new ChunkFiles(file, false, false));
        assertTrue(e2.getMessage().contains(file.toString()), e2.getMessage());
    }

    @ParameterizedTest(name = "direct={0}")
    @ValueSource(booleans = {false, true})
    void a_full_disk_fails_the_write_naming_the_file_and_leaves_no_temp_file(boolean direct) throws Exception {
        Path devFull = Path.of("/dev/full");
        TestPrerequisites.require(Files.exists(devFull), "/dev/full is needed to simulate ENOSPC");
        // The temp file is created as usual, but its bytes go to /dev/full: every write fails with ENOSPC.
        ChunkFiles files = new ChunkFiles(dir, direct, false, false,
                target -> target.resolveSibling(target.getFileName() + ".tmp-1-1"), (temp, options) -> {
                    FileChannel.open(temp, options).close();
                    return FileChannel.open(devFull, StandardOpenOption.WRITE);
                });
        CacheEngineKey key = TestChunks.key(1);
        Path temp = dir.resolve(files.pathFor(key).getFileName() + ".tmp-1-1");

        IOException e = assertThrows(IOException.class, () -> files.write(key, chunk(1)));
        String msg = e.getMessage();
        assertTrue(msg.contains(files.pathFor(key).toString()), msg);
        assertTrue(msg.contains(temp.toString()), msg);
        assertTrue(msg.contains("No space left on device"), msg);
        assertFalse(Files.exists(temp, LinkOption.NOFOLLOW_LINKS), "the temp file is gone");
        assertFalse(Files.exists(files.pathFor(key)));
        assertTrue(Files.exists(devFull));
        System.out.println("disk full (direct=" + direct + "): " + msg);
    }

    @Test
    void reading_a_deleted_file_is_an_io_error_naming_it() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, true, false);
        files.write(TestChunks.key(1), chunk(1));
        Path p = files.pathFor(TestChunks.key(1));
        ChunkFileHeader h = files.readHeader(p).orElseThrow();
        files.delete(p);
        IOException e = assertThrows(IOException.class, () -> files.readPayload(p, h, empty()));
        assertTrue(e.getMessage().contains(p.toString()) && e.getMessage().contains("opening"), e.getMessage());
        IOException e2 = assertThrows(IOException.class, () -> files.readHeader(p));
        assertTrue(e2.getMessage().contains(p.toString()), e2.getMessage());
    }

    @Test
    void a_destination_too_small_for_the_payload_is_refused() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunk(1));
        Path p = files.pathFor(TestChunks.key(1));
        ChunkFileHeader h = files.readHeader(p).orElseThrow();
        MemoryObj small = chunks.allocate(DiskTestChunks.TINY, DType.BFLOAT16, MemoryFormat.KV_2LTD);
        assertThrows(IllegalArgumentException.class, () -> files.readPayload(p, h, small));
    }

    @Test
    void a_file_replaced_since_its_header_was_read_is_not_returned_as_the_old_chunk() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        Path p = files.pathFor(TestChunks.key(1));
        files.write(TestChunks.key(1), chunk(1));
        ChunkFileHeader old = files.readHeader(p).orElseThrow();
        MemoryObj tiny = chunks.chunk(DiskTestChunks.TINY, 5);
        files.write(TestChunks.key(1), tiny);
        CorruptChunkException e = assertThrows(CorruptChunkException.class, () -> files.readPayload(p, old, empty()));
        assertTrue(e.getMessage().contains(p.toString()), e.getMessage());
    }
}
