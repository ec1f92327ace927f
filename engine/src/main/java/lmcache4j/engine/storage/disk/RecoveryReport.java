package lmcache4j.engine.storage.disk;

import java.util.List;

/**
 * What {@link ChunkFiles#recover()} found.
 *
 * @param chunks          the complete chunk files whose headers are sound, which were kept (their
 *                        payloads are checked before they are served, see {@link LocalDiskBackend})
 * @param removedPartial  temp files of writes that never finished (a crash or kill mid-write), deleted
 * @param removedCorrupt  files with the lmcache4j magic but a damaged, truncated or inconsistent
 *                        header, or a key that does not parse or does not match the file name, deleted
 * @param foreign         entries that are not the cache's (no chunk magic, a symlink, a directory,
 *                        another program's files), left alone: never deleted, overwritten or followed
 * @param foreignExamples the names of the first few of them
 */
public record RecoveryReport(List<RecoveredChunk> chunks, int removedPartial, int removedCorrupt, int foreign,
                             List<String> foreignExamples) {
    /** How many foreign names a report keeps. */
    public static final int MAX_EXAMPLES = 5;

    public RecoveryReport {
        chunks = List.copyOf(chunks);
        foreignExamples = List.copyOf(foreignExamples);
    }

    /** Bytes on disk of the recovered chunks. */
    public long totalBytes() {
        long sum = 0;
        for (RecoveredChunk c : chunks) {
            sum += c.fileBytes();
        }
        return sum;
    }

    /**
     * One line on the foreign entries, as the recovery logs it once, for example
     * {@code "2 entries that are not lmcache4j chunk files were left alone (thesis.txt, data.bin)"};
     * empty when there are none.
     */
    public String foreignSummary() {
        if (foreign == 0) {
            return "";
        }
        return foreign + (foreign == 1 ? " entry that is not an lmcache4j chunk file was" : " entries that are not lmcache4j "
                + "chunk files were") + " left alone (" + String.join(", ", foreignExamples)
                + (foreign > foreignExamples.size() ? ", ..." : "") + ")";
    }
}
