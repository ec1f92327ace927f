package lmcache4j.engine.storage.disk;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import lmcache4j.allocator.TensorShape;

/**
 * Edits real chunk files on disk the way an attacker, a bad disk or a crash would: a flipped payload
 * byte, a truncation, or a forged header whose own CRC is valid (so only a check of its fields
 * against the payload can catch it). Public so the engine-level tests can use it too.
 */
public final class ChunkFileEdits {
    private ChunkFileEdits() {
    }

    /** The chunk files ({@code *.lmc} regular files) in {@code dir}, sorted by name. */
    public static List<Path> chunkFiles(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(ChunkFileNames.SUFFIX) && Files.isRegularFile(p))
                    .sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** XORs the payload byte at {@code payloadOffset} with 0xFF; the header (and its CRC) stay intact. */
    public static void flipPayloadByte(Path file, long payloadOffset) {
        long at = ChunkFileHeader.BYTES + payloadOffset;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            if (ch.read(b, at) != 1) {
                throw new IllegalArgumentException(file + " has no byte at " + at);
            }
            b.put(0, (byte) (b.get(0) ^ 0xFF)).rewind();
            ch.write(b, at);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Cuts {@code file} to {@code size} bytes. */
    public static void truncate(Path file, long size) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(size);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The header of a file, read without any check beyond the header's own (magic, version, CRC). */
    public static ChunkFileHeader rawHeader(Path file) {
        byte[] head = readHead(file);
        MemorySegment raw = MemorySegment.ofArray(head);
        ChunkFileFormat.Parsed parsed = ChunkFileFormat.decode(raw, head.length);
        if (parsed.header() == null) {
            throw new IllegalArgumentException(file + " has no header to edit: " + parsed.reason());
        }
        return parsed.header();
    }

    /** Rewrites the header with {@code edit} applied and a freshly computed, valid header CRC. */
    public static void forgeHeader(Path file, UnaryOperator<ChunkFileHeader> edit) {
        ChunkFileHeader h = edit.apply(rawHeader(file));
        MemorySegment buf = MemorySegment.ofArray(new byte[ChunkFileHeader.BYTES]);
        ChunkFileFormat.encode(buf, h.keyString().getBytes(StandardCharsets.UTF_8), h.format(), h.dtype(), h.shape(),
                h.payloadLength(), h.crc32c());
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.write(buf.asByteBuffer(), 0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A forgery with another shape and everything else, payload length included, unchanged. */
    public static void forgeShape(Path file, TensorShape shape) {
        forgeHeader(file, h -> new ChunkFileHeader(h.keyString(), h.format(), h.dtype(), shape, h.payloadLength(), h.crc32c()));
    }

    private static byte[] readHead(Path file) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(ChunkFileHeader.BYTES);
            while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
                // keep reading
            }
            return java.util.Arrays.copyOf(b.array(), b.position());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
