package lmcache4j.engine.storage.disk;

import java.nio.file.Path;

/**
 * A chunk file whose payload fails its CRC32C, is shorter than its header says, or whose header no
 * longer matches what the caller expected. The caller deletes the file and treats the chunk as a
 * miss.
 */
public final class CorruptChunkException extends Exception {
    private static final long serialVersionUID = 1L;

    private final transient Path file;

    public CorruptChunkException(Path file, String what) {
        super("corrupt chunk file " + file + ": " + what);
        this.file = file;
    }

    /** The corrupt file. */
    public Path file() {
        return file;
    }
}
