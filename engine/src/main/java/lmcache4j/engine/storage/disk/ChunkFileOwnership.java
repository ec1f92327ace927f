package lmcache4j.engine.storage.disk;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Optional;

/**
 * What in the chunk directory is the cache's own. A cache must never delete, overwrite or follow
 * what it did not write, so a name is not enough: only a regular file (never a symlink, whatever
 * it points at) named as the cache names files and starting with the chunk magic is the cache's.
 * A temp file may also be empty (a write killed before its first byte).
 */
final class ChunkFileOwnership {
    /** What a path holds, as far as the cache is concerned. */
    enum Owner { ABSENT, CACHE, FOREIGN }

    private ChunkFileOwnership() {
    }

    /** The attributes of {@code path} itself (a symlink is not followed), or empty when nothing is there. */
    static Optional<BasicFileAttributes> attributes(Path path) throws IOException {
        try {
            return Optional.of(Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
    }

    /** Who owns {@code file}, a path named like a complete chunk file. */
    static Owner ofChunkFile(Path file) throws IOException {
        Optional<BasicFileAttributes> attrs = attributes(file);
        if (attrs.isEmpty()) {
            return Owner.ABSENT;
        }
        return isChunkFile(file, attrs.get()) ? Owner.CACHE : Owner.FOREIGN;
    }

    /** Whether {@code file} (with these no-follow attributes) is a complete chunk file's name with the magic. */
    static boolean isChunkFile(Path file, BasicFileAttributes attrs) {
        return attrs.isRegularFile() && file.getFileName().toString().endsWith(ChunkFileNames.SUFFIX) && startsWithMagic(file);
    }

    /** Whether {@code file} (with these no-follow attributes) is a temp file a write of the cache left. */
    static boolean isTempFile(Path file, BasicFileAttributes attrs) {
        return attrs.isRegularFile() && ChunkFileNames.isTemp(file.getFileName().toString())
                && (attrs.size() == 0 || startsWithMagic(file));
    }

    /**
     * Whether the regular file {@code file} begins with the chunk magic; read without following a
     * symlink. A file that cannot be read is not proven the cache's, so it is not.
     */
    static boolean startsWithMagic(Path file) {
        ByteBuffer head = ByteBuffer.allocate(ChunkFileFormat.MAGIC_BYTES);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            while (head.hasRemaining() && ch.read(head, head.position()) > 0) {
                // a short read of a regular file: keep reading until end of file
            }
        } catch (IOException e) {
            return false;
        }
        return ChunkFileFormat.startsWithMagic(MemorySegment.ofArray(head.array()), head.position());
    }
}
