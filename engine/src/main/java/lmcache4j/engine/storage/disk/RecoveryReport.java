package lmcache4j.engine.storage.disk;

import java.util.List;

/**
 * What {@link ChunkFiles#recover()} found.
 *
 * @param chunks         the complete, valid chunk files, which were kept
 * @param removedPartial temp files of writes that never finished (a crash or kill mid-write), deleted
 * @param removedCorrupt files with the lmcache4j magic but a damaged, truncated or inconsistent
 *                       header, or a key that does not parse or does not match the file name, deleted
 * @param removedForeign files that are not lmcache4j chunk files at all, deleted
 */
public record RecoveryReport(List<RecoveredChunk> chunks, int removedPartial, int removedCorrupt, int removedForeign) {
    public RecoveryReport {
        chunks = List.copyOf(chunks);
    }

    /** Bytes on disk of the recovered chunks. */
    public long totalBytes() {
        long sum = 0;
        for (RecoveredChunk c : chunks) {
            sum += c.fileBytes();
        }
        return sum;
    }
}
