package lmcache4j.engine.storage.disk;

import java.nio.file.Path;
import java.util.Objects;

import lmcache4j.engine.key.CacheKey;

/**
 * One chunk file with a sound header found on disk at start. Its payload checksum has not been
 * verified yet: the tier's background check does that before offering it, and every read again.
 *
 * @param key       the key parsed from the header
 * @param header    the file's header
 * @param path      the file
 * @param fileBytes the file's size on disk (header and padding included)
 */
public record RecoveredChunk(CacheKey key, ChunkFileHeader header, Path path, long fileBytes) {
    public RecoveredChunk {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(header, "header");
        Objects.requireNonNull(path, "path");
    }
}
