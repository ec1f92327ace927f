package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.UnaryOperator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.storage.TestChunks;

/**
 * Headers whose CRC is valid but whose fields disagree with the payload: each is caught by the
 * header check itself, so recovery removes the file and a read reports a corrupt chunk, never an
 * unchecked exception.
 */
class ChunkFileForgeryTest {
    @TempDir
    Path dir;

    @RegisterExtension
    final TrackedChunks chunks = new TrackedChunks(16L << 20);

    /** The forgeries: each keeps a valid header CRC. ODD is [2, 4, 129, 509] bf16. */
    private static UnaryOperator<ChunkFileHeader> forgery(String name) {
        return switch (name) {
            case "half the tokens" -> h -> with(h, h.shape().withDim(2, 64), h.dtype(), h.format(), h.payloadLength());
            case "twice the tokens" -> h -> with(h, h.shape().withDim(2, 258), h.dtype(), h.format(), h.payloadLength());
            case "a wider dtype" -> h -> with(h, h.shape(), DType.FLOAT32, h.format(), h.payloadLength());
            case "a rank the format cannot have" -> h -> with(h, TensorShape.of(2, 4 * 129, 509), h.dtype(), h.format(),
                    h.payloadLength());
            case "no K/V plane" -> h -> with(h, TensorShape.of(1, 8, 129, 509), h.dtype(), h.format(), h.payloadLength());
            case "a shorter payload length" -> h -> with(h, h.shape(), h.dtype(), h.format(), h.payloadLength() - 2);
            case "an empty payload" -> h -> with(h, TensorShape.of(2, 4, 0, 509), h.dtype(), h.format(), 0);
            default -> throw new IllegalArgumentException(name);
        };
    }

    /** An object of the header's shape, dtype and format, or null when no allocator would make one. */
    private MemoryObj allocatable(ChunkFileHeader h) {
        try {
            return chunks.allocator().allocate(h.shape(), h.dtype(), h.format()).map(chunks::track).orElse(null);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static ChunkFileHeader with(ChunkFileHeader h, TensorShape shape, DType dtype, MemoryFormat format, long length) {
        return new ChunkFileHeader(h.keyString(), format, dtype, shape, length, h.crc32c());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"half the tokens", "twice the tokens", "a wider dtype", "a rank the format cannot have",
            "no K/V plane", "a shorter payload length", "an empty payload"})
    void a_forged_header_is_invalid_removed_at_recovery_and_corrupt_on_read(String name) throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunks.chunk(DiskTestChunks.ODD, 1));
        files.write(TestChunks.key(2), chunks.chunk(DiskTestChunks.ODD, 2));
        Path p = files.pathFor(TestChunks.key(1));
        ChunkFileHeader genuine = files.readHeader(p).orElseThrow();
        ChunkFileEdits.forgeHeader(p, forgery(name));
        ChunkFileHeader forged = ChunkFileEdits.rawHeader(p);

        assertTrue(files.readHeader(p).isEmpty(), "the forged header is not valid: " + forged);
        // a reader that trusted either header gets a corrupt-chunk report, not an IllegalArgumentException
        MemoryObj dst = chunks.allocate(DiskTestChunks.ODD, DType.BFLOAT16, MemoryFormat.KV_2LTD);
        assertThrows(CorruptChunkException.class, () -> files.readPayload(p, genuine, dst));
        // as the backend does: an object made from the forged header, then the payload into it
        MemoryObj asForged = allocatable(forged);
        if (asForged != null) {
            assertThrows(CorruptChunkException.class, () -> files.readPayload(p, forged, asForged));
        }

        RecoveryReport r = new ChunkFiles(dir, false, false).recover();
        assertEquals(1, r.chunks().size());
        assertEquals(TestChunks.key(2), r.chunks().getFirst().key());
        assertEquals(1, r.removedCorrupt());
        assertFalse(Files.exists(p), "the forged file carries the cache's magic: it is the cache's to remove");
    }

    @Test
    void a_file_with_the_magic_and_garbage_after_it_is_the_caches_and_removed() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        files.write(TestChunks.key(1), chunks.chunk(DiskTestChunks.TINY, 1));
        Path p = files.pathFor(TestChunks.key(1));
        byte[] bytes = Files.readAllBytes(p);
        for (int i = 8; i < bytes.length; i++) {
            bytes[i] = (byte) (i * 131 + 17);
        }
        Files.write(p, bytes);
        RecoveryReport r = files.recover();
        assertEquals(List.of(), r.chunks());
        assertEquals(1, r.removedCorrupt());
        assertFalse(Files.exists(p));
    }
}
