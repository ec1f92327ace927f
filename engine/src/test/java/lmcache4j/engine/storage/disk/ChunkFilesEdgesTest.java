package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

import com.sun.nio.file.ExtendedOpenOption;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.TestPrerequisites;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.storage.TestChunks;

/**
 * The file layer's choices one step from the happy path: which transfers use O_DIRECT (memory that
 * is not 4 KiB-aligned never does), fsync when asked and only then, a write that fails with a
 * runtime error, what {@code delete} answers, and the lines an operator reads in the log.
 */
class ChunkFilesEdgesTest {
    @TempDir
    Path dir;

    @RegisterExtension
    final TrackedChunks chunks = new TrackedChunks(16L << 20);

    private final AtomicLong temps = new AtomicLong();
    private final UnaryOperator<Path> tempPath = target -> target.resolveSibling(target.getFileName() + ".tmp-1-"
            + temps.incrementAndGet());

    private MemoryObj empty() {
        MemoryObj obj = chunks.allocate(DiskTestChunks.ODD, DType.BFLOAT16, MemoryFormat.KV_2LTD);
        obj.segment().fill((byte) 0x5A);
        return obj;
    }

    private static List<Path> tempFiles(Path dir) throws IOException {
        try (var list = Files.list(dir)) {
            return list.filter(p -> p.getFileName().toString().contains(".tmp-")).toList();
        }
    }

    // ---- O_DIRECT exactly for aligned memory ---------------------------------------------------

    @Test
    void o_direct_is_used_for_aligned_memory_only_and_both_read_back() throws Exception {
        TestPrerequisites.require(DiskTestChunks.oDirectWorks(dir), "a file system with O_DIRECT for " + dir);
        List<Set<OpenOption>> opened = new ArrayList<>();
        ChunkFiles files = new ChunkFiles(dir, true, false, false, tempPath, (temp, options) -> {
            opened.add(options);
            return FileChannel.open(temp, options);
        });
        assertTrue(files.directIo(), files.ioDescription());
        // 64-byte alignment: after a 128-byte object, the next one starts 128 bytes past a 4 KiB boundary.
        try (TensorMemoryAllocator loose = TensorMemoryAllocator.create("unaligned",
                HostArena.allocate(4L << 20, HostArenaOptions.DEFAULT.withHugePages(false)), 64)) {
            MemoryObj pad = DiskTestChunks.chunk(loose, DiskTestChunks.TINY, 0);
            MemoryObj unaligned = DiskTestChunks.chunk(loose, DiskTestChunks.ODD, 7);
            MemoryObj unalignedDst = DiskTestChunks.allocate(loose, DiskTestChunks.ODD, DType.BFLOAT16, MemoryFormat.KV_2LTD);
            try {
                assertTrue(unaligned.segment().address() % 4096 != 0 && unalignedDst.segment().address() % 4096 != 0);
                MemoryObj aligned = chunks.chunk(DiskTestChunks.ODD, 6);
                assertEquals(0, aligned.segment().address() % 4096);

                files.write(TestChunks.key(6), aligned);
                files.write(TestChunks.key(7), unaligned);
                assertTrue(opened.get(0).contains(ExtendedOpenOption.DIRECT), "aligned memory is written with O_DIRECT");
                assertFalse(opened.get(1).contains(ExtendedOpenOption.DIRECT), "unaligned memory is written buffered");

                // Unaligned memory read buffered (O_DIRECT would refuse it), aligned memory with O_DIRECT.
                Path p7 = files.pathFor(TestChunks.key(7));
                files.readPayload(p7, files.readHeader(p7).orElseThrow(), unalignedDst);
                assertEquals(-1, DiskTestChunks.mismatch(unalignedDst.segment(), unalignedDst.byteSize(), 7));
                MemoryObj alignedDst = empty();
                files.readPayload(p7, files.readHeader(p7).orElseThrow(), alignedDst);
                assertEquals(-1, DiskTestChunks.mismatch(alignedDst.segment(), alignedDst.byteSize(), 7));

                // The error names the mode the read used.
                ChunkFileHeader h = files.readHeader(p7).orElseThrow();
                Files.delete(p7);
                IOException direct = assertThrows(IOException.class, () -> files.readPayload(p7, h, alignedDst));
                assertTrue(direct.getMessage().contains("(O_DIRECT): opening it failed"), direct.getMessage());
                IOException buffered = assertThrows(IOException.class, () -> files.readPayload(p7, h, unalignedDst));
                assertTrue(buffered.getMessage().contains("(buffered): opening it failed"), buffered.getMessage());
            } finally {
                unalignedDst.release();
                unaligned.release();
                pad.release();
            }
        }
    }

    @Test
    void verify_takes_a_single_block_buffer_and_reads_heap_buffers_without_o_direct() throws Exception {
        TestPrerequisites.require(DiskTestChunks.oDirectWorks(dir), "a file system with O_DIRECT for " + dir);
        ChunkFiles files = new ChunkFiles(dir, true, false);
        files.write(TestChunks.key(1), chunks.chunk(DiskTestChunks.ODD, 1));
        Path p = files.pathFor(TestChunks.key(1));
        ChunkFileHeader h = files.readHeader(p).orElseThrow();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment oneBlock = arena.allocate(4096, 4096);
            MemorySegment heap = MemorySegment.ofArray(new byte[8192]);
            files.verify(p, h, oneBlock); // the smallest buffer allowed: one block at a time
            files.verify(p, h, heap);
            ChunkFileEdits.flipPayloadByte(p, 1_000_000);
            assertThrows(CorruptChunkException.class, () -> files.verify(p, h, oneBlock));
            assertThrows(CorruptChunkException.class, () -> files.verify(p, h, heap));

            Files.delete(p);
            IOException direct = assertThrows(IOException.class, () -> files.verify(p, h, oneBlock));
            assertTrue(direct.getMessage().contains("(O_DIRECT): opening it failed"), direct.getMessage());
            IOException buffered = assertThrows(IOException.class, () -> files.verify(p, h, heap));
            assertTrue(buffered.getMessage().contains("(buffered): opening it failed"), buffered.getMessage());
        }
    }

    // ---- fsync and a failing write ---------------------------------------------------------------

    @Test
    void the_temp_file_is_forced_to_disk_exactly_when_fsync_is_on() throws Exception {
        for (boolean fsync : new boolean[] {false, true}) {
            AtomicInteger forces = new AtomicInteger();
            Path sub = dir.resolve("fsync-" + fsync);
            ChunkFiles files = new ChunkFiles(sub, false, fsync, false, tempPath,
                    (temp, options) -> new WatchedChannel(FileChannel.open(temp, options), forces, null));
            assertEquals(fsync, files.fsync());
            files.write(TestChunks.key(1), chunks.chunk(DiskTestChunks.TINY, 1));
            assertEquals(fsync ? 1 : 0, forces.get(), "forces of the temp file with fsync " + fsync);
            assertTrue(Files.exists(files.pathFor(TestChunks.key(1))));
        }
    }

    @Test
    void a_write_that_fails_with_a_runtime_error_rethrows_it_and_leaves_no_file() throws Exception {
        IllegalStateException fault = new IllegalStateException("simulated fault below the file layer");
        ChunkFiles files = new ChunkFiles(dir, false, false, false, tempPath,
                (temp, options) -> new WatchedChannel(FileChannel.open(temp, options), new AtomicInteger(), fault));
        CacheEngineKey key = TestChunks.key(3);
        IllegalStateException thrown = assertThrows(IllegalStateException.class,
                () -> files.write(key, chunks.chunk(DiskTestChunks.ODD, 3)));
        assertSame(fault, thrown);
        assertEquals(List.of(), tempFiles(dir), "the temp file the write made is gone");
        assertFalse(Files.exists(files.pathFor(key)));
    }

    @Test
    void a_directory_that_cannot_be_made_is_refused_with_the_reason_once() throws Exception {
        Path file = Files.writeString(dir.resolve("plain-file"), "x");
        Path under = file.resolve("chunks");
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> new ChunkFiles(under, false, false));
        assertEquals("cannot create the chunk directory " + under + ": Not a directory", e.getMessage());
    }

    // ---- delete's answer -------------------------------------------------------------------------

    @Test
    void delete_says_whether_it_deleted_and_leaves_what_is_not_the_caches() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false, tempPath);
        assertEquals(dir.toAbsolutePath().normalize(), files.directory());
        CacheEngineKey own = TestChunks.key(1);
        files.write(own, chunks.chunk(DiskTestChunks.TINY, 1));
        Path ownPath = files.pathFor(own);
        assertTrue(files.delete(ownPath), "the cache's own file is deleted");
        assertFalse(Files.exists(ownPath));
        assertFalse(files.delete(ownPath), "a file already gone: nothing deleted");

        Path foreign = files.pathFor(TestChunks.key(2));
        Files.writeString(foreign, "another program's file, at a chunk's name");
        Path outside = Files.writeString(dir.resolve("outside.txt"), "not the cache's");
        Path link = files.pathFor(TestChunks.key(3));
        Files.createSymbolicLink(link, outside);
        try (CapturedLog log = CapturedLog.of(ChunkFiles.class)) {
            assertFalse(files.delete(foreign), "a file without the chunk magic is not deleted");
            assertFalse(files.delete(link), "a symlink is not deleted");
            List<String> warnings = log.at(Level.WARNING);
            assertEquals(2, warnings.size(), warnings.toString());
            assertTrue(warnings.get(0).startsWith("not deleting " + foreign), warnings.get(0));
            assertTrue(warnings.get(1).startsWith("not deleting " + link), warnings.get(1));
        }
        assertTrue(Files.exists(foreign));
        assertTrue(Files.exists(link, LinkOption.NOFOLLOW_LINKS) && Files.exists(outside));
    }

    // ---- what the log says -----------------------------------------------------------------------

    @Test
    void the_log_names_the_io_mode_and_a_clean_recovery_warns_of_nothing() throws Exception {
        try (CapturedLog log = CapturedLog.of(ChunkFiles.class)) {
            ChunkFiles files = new ChunkFiles(dir, false, false);
            assertEquals(List.of("chunk files in " + files.directory() + ": " + files.ioDescription()), log.at(Level.INFO));
            files.write(TestChunks.key(1), chunks.chunk(DiskTestChunks.TINY, 1));
            log.reset();
            RecoveryReport report = files.recover();
            assertEquals(1, report.chunks().size());
            assertEquals(List.of(), log.at(Level.WARNING), "nothing removed, nothing foreign: no warning");
            List<String> info = log.at(Level.INFO);
            assertEquals(1, info.size(), info.toString());
            assertTrue(info.get(0).contains("recovered 1 chunk files (")
                    && info.get(0).contains("removed 0 partial and 0 corrupt files; left 0 foreign entries alone"), info.get(0));
        }
    }

    @Test
    void a_recovery_that_removes_or_leaves_files_warns_once_each_naming_an_example() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunks.chunk(DiskTestChunks.TINY, 1));
        // The cache's magic over a damaged header: its own file, and corrupt.
        Path corrupt = files.pathFor(TestChunks.key(2));
        byte[] bad = new byte[4096];
        System.arraycopy("LMC4JKV".getBytes(StandardCharsets.US_ASCII), 0, bad, 0, 7);
        java.util.Arrays.fill(bad, 8, 4096, (byte) 0x77);
        Files.write(corrupt, bad);
        Path foreign = Files.writeString(dir.resolve("notes.txt"), "someone else's");
        Path temp = dir.resolve("unfinished" + ChunkFileNames.TEMP_MARKER + "1-1");
        Files.write(temp, bad);
        try (CapturedLog log = CapturedLog.of(ChunkFiles.class)) {
            RecoveryReport report = files.recover();
            assertEquals(1, report.removedCorrupt());
            assertEquals(1, report.foreign());
            List<String> warnings = log.at(Level.WARNING);
            assertEquals(2, warnings.size(), warnings.toString());
            assertTrue(warnings.get(0).contains("removed 1 corrupt chunk file(s)")
                    && warnings.get(0).contains("for example " + corrupt.getFileName() + ": "), warnings.get(0));
            assertTrue(warnings.get(1).contains(report.foreignSummary()), warnings.get(1));
            assertEquals(1, report.removedPartial());
            assertTrue(log.at(Level.INFO).get(0).contains("removed 1 partial and 1 corrupt files; left 1 foreign entries alone"),
                    log.at(Level.INFO).toString());
            List<String> debug = log.at(Level.DEBUG);
            assertTrue(debug.stream().anyMatch(d -> d.startsWith("removing " + corrupt + " from the chunk directory: ")),
                    debug.toString());
            assertTrue(debug.stream().anyMatch(d -> d.startsWith("leaving " + foreign + " alone: ")), debug.toString());
        }
        assertFalse(Files.exists(corrupt));
        assertTrue(Files.exists(foreign));
    }
}
