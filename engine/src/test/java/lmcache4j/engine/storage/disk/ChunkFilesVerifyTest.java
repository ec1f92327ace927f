package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.storage.TestChunks;

/**
 * {@link ChunkFiles#verify}: the whole-file check the tier runs on recovered files before offering
 * them, and what it costs (printed; sized by {@code -Dlmcache4j.verify.chunks} and
 * {@code -Dlmcache4j.verify.chunkMiB}).
 */
class ChunkFilesVerifyTest {
    @TempDir
    Path dir;

    private TensorMemoryAllocator alloc;
    private Arena arena;
    private final List<MemoryObj> live = new ArrayList<>();

    @BeforeEach
    void setUp() {
        alloc = DiskTestChunks.allocator(64L << 20);
        arena = Arena.ofConfined();
    }

    @AfterEach
    void tearDown() {
        live.forEach(MemoryObj::release);
        alloc.close();
        arena.close();
    }

    private MemoryObj chunk(TensorShape shape, long seed) {
        MemoryObj obj = DiskTestChunks.chunk(alloc, shape, seed);
        live.add(obj);
        return obj;
    }

    /** A buffer smaller than the files, so a check takes several reads. */
    private MemorySegment buffer() {
        return arena.allocate(64 << 10, ChunkFileHeader.ALIGNMENT);
    }

    @ParameterizedTest(name = "direct={0}")
    @ValueSource(booleans = {false, true})
    void a_sound_file_passes_and_every_kind_of_damage_is_corrupt(boolean direct) throws Exception {
        ChunkFiles files = new ChunkFiles(dir, direct, false);
        for (TensorShape shape : new TensorShape[] {DiskTestChunks.ODD, DiskTestChunks.ALIGNED, DiskTestChunks.TINY}) {
            files.write(TestChunks.key(1), chunk(shape, 1));
            Path p = files.pathFor(TestChunks.key(1));
            ChunkFileHeader h = files.readHeader(p).orElseThrow();
            files.verify(p, h, buffer());

            ChunkFileEdits.flipPayloadByte(p, h.payloadLength() - 1); // the last payload byte
            CorruptChunkException crc = assertThrows(CorruptChunkException.class, () -> files.verify(p, h, buffer()));
            assertTrue(crc.getMessage().contains("payload CRC32C mismatch") && crc.getMessage().contains(p.toString()),
                    crc.getMessage());
            ChunkFileEdits.flipPayloadByte(p, h.payloadLength() - 1);
            files.verify(p, h, buffer());

            if (h.paddedPayloadLength() > h.payloadLength()) {
                writeByte(p, ChunkFileHeader.BYTES + h.payloadLength(), (byte) 1);
                CorruptChunkException pad = assertThrows(CorruptChunkException.class, () -> files.verify(p, h, buffer()));
                assertTrue(pad.getMessage().contains("padding"), pad.getMessage());
                writeByte(p, ChunkFileHeader.BYTES + h.payloadLength(), (byte) 0);
            }
            ChunkFileEdits.forgeShape(p, shape.withDim(0, 1));
            assertThrows(CorruptChunkException.class, () -> files.verify(p, h, buffer()));
            files.write(TestChunks.key(1), chunk(shape, 1));
            ChunkFileEdits.truncate(p, h.fileBytes() - 4096);
            assertThrows(CorruptChunkException.class, () -> files.verify(p, h, buffer()));
        }
    }

    @Test
    void a_buffer_that_o_direct_cannot_use_is_refused() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunk(DiskTestChunks.TINY, 1));
        Path p = files.pathFor(TestChunks.key(1));
        ChunkFileHeader h = files.readHeader(p).orElseThrow();
        assertThrows(IllegalArgumentException.class, () -> files.verify(p, h, arena.allocate(6000, 4096)));
        assertThrows(IllegalArgumentException.class, () -> files.verify(p, h, arena.allocate(8192, 4096).asSlice(8)));
    }

    /**
     * What the background check costs: header-only recovery, then every payload read and CRC32C'd,
     * buffered (page cache warm from the writes) and with O_DIRECT (from the device).
     */
    @Test
    void the_check_of_a_recovered_directory_is_measured() throws Exception {
        int chunks = Integer.getInteger("lmcache4j.verify.chunks", 8);
        int chunkMiB = Integer.getInteger("lmcache4j.verify.chunkMiB", 1);
        TensorShape shape = TensorShape.of(2, 8, chunkMiB * 32, 1024); // bf16: chunkMiB MiB
        try (TensorMemoryAllocator big = DiskTestChunks.allocator(shape.byteSize(lmcache4j.allocator.DType.BFLOAT16) + (1 << 20))) {
            MemoryObj obj = DiskTestChunks.chunk(big, shape, 7);
            ChunkFiles writer = new ChunkFiles(dir, true, false);
            for (int i = 0; i < chunks; i++) {
                obj.segment().set(DiskTestChunks.LE_LONG, 0, i);
                writer.write(TestChunks.key(i), obj);
            }
            obj.release();
        }
        for (boolean direct : new boolean[] {false, true}) {
            ChunkFiles files = new ChunkFiles(dir, direct, false);
            long t0 = System.nanoTime();
            RecoveryReport r = files.recover();
            long headersNanos = System.nanoTime() - t0;
            assertEquals(chunks, r.chunks().size());
            List<RecoveredChunk> verified = new ArrayList<>();
            try (RecoveredChunkVerifier v = new RecoveredChunkVerifier(files, r.chunks(), new RecoveredChunkVerifier.Listener() {
                @Override
                public boolean wanted(RecoveredChunk chunk) {
                    return true;
                }

                @Override
                public void verified(RecoveredChunk chunk) {
                    verified.add(chunk);
                }

                @Override
                public void rejected(RecoveredChunk chunk, Exception why, boolean corrupt) {
                    throw new AssertionError(chunk.path() + ": " + why);
                }
            })) {
                assertTrue(v.await(10, java.util.concurrent.TimeUnit.MINUTES));
                VerificationProgress p = v.progress();
                assertEquals(chunks, verified.size());
                assertEquals(r.totalBytes(), p.bytes());
                System.out.printf(Locale.ROOT, "verify cost: %d chunk files of %d MiB (%.1f MiB), %s: header-only recovery "
                        + "%.2f ms; payload check %.1f ms = %.2f GB/s%n", chunks, chunkMiB, r.totalBytes() / 1048576.0,
                        files.directIo() ? "O_DIRECT" : "buffered (page cache)", headersNanos / 1e6, p.nanos() / 1e6,
                        p.gbPerSecond());
            }
        }
    }

    private static void writeByte(Path file, long offset, byte value) throws Exception {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[] {value}), offset);
        }
    }
}
